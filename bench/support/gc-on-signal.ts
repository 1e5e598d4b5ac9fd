// Loaded into a service child of a bench (`node --expose-gc --import <this>`): on SIGUSR2 it
// runs three full collections and writes process.memoryUsage() as JSON to the file named by
// BENCH_MEMORY_FILE, so a bench can read a service's heap after GC without the service
// knowing anything of benches.
import { writeFileSync } from 'node:fs';

const gc = (globalThis as { gc?: () => void }).gc;
const file = process.env.BENCH_MEMORY_FILE;
if (gc === undefined || file === undefined) throw new Error('gc-on-signal needs node --expose-gc and BENCH_MEMORY_FILE');
process.on('SIGUSR2', () => {
  for (let i = 0; i < 3; i++) gc();
  writeFileSync(file, JSON.stringify(process.memoryUsage()));
});
