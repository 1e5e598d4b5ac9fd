// Memory benches measure after full collections, so they need `node --expose-gc`.

const gc = (globalThis as { gc?: () => void }).gc;

/** Memory after three full GCs (what survives them is what the bench keeps); exits 2 without --expose-gc. */
export function settledMemory(): NodeJS.MemoryUsage {
  if (gc === undefined) {
    console.error('run with node --expose-gc');
    process.exit(2);
  }
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage();
}
