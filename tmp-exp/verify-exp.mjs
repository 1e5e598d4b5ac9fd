import { open } from 'lmdb';
import { crc32 } from 'node:zlib';
const root = open({ path: process.argv[2], readOnly: true });
const db = root.openDB({ name: 'snapshots', encoding: 'binary' });
const mode = process.argv[3];
let gens = new Set(); for (const k of db.getKeys()) if (Array.isArray(k)) gens.add(k[0]);
const t0 = performance.now(); const c0 = process.cpuUsage();
let n = 0, bytes = 0, acc = 0;
for (const g of gens) {
  if (mode === 'range') {
    for (const { key, value } of db.getRange({ start: [g, -1e9], end: [g, -1] })) { acc ^= crc32(value.subarray(5)); n++; bytes += value.length; }
  } else {
    for (const key of db.getKeys({ start: [g, -1e9], end: [g, -1] })) { const v = db.getBinaryFast(key); acc ^= crc32(v.subarray(5)); n++; bytes += v.length; }
  }
}
const c = process.cpuUsage(c0);
console.log(mode, 'gens', gens.size, 'chunks', n, 'MB', (bytes / 1e6).toFixed(0), 'wall', (performance.now() - t0).toFixed(0), 'cpu', ((c.user + c.system) / 1000).toFixed(0), acc);
