// inspectStore against stores LMDB really wrote: a file that ends before mm_last_pg is healthy
// when every page past its end is free (LMDB leaves freed tail pages unwritten), and damaged
// when the cut reaches a page a tree uses.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database, RootDatabase } from 'lmdb';
import { DATA_FILE, type FreeList, inspectStore, openStore, readFreeList, StoreDamagedError } from '../src/engine/store.js';

const SUITE_TIMEOUT_MS = 120_000;
/** Commits of random puts and removes, each checked. */
const RANDOM_COMMITS = 150;
/** Tries at leaving free pages at the end of the file before giving up. */
const MAX_TAIL_ATTEMPTS = 20;
/** The key of the value written to grow the file and removed to free its end. */
const TAIL_KEY = 1_000_000_000;

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'store-inspect-'));
  dirs.push(dir);
  return dir;
}

/** A deterministic generator, so a failure replays. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

/** The pages the trees use: the main DB (with the named DB's record), the named DB, the free DB. */
function pagesInUse(root: RootDatabase, log: Database<Buffer, number>): number {
  const stats = root.getStats() as TreeStats & { free: TreeStats };
  return [stats, log.getStats() as TreeStats, stats.free].reduce(
    (sum, tree) => sum + tree.treeBranchPageCount + tree.treeLeafPageCount + tree.overflowPages,
    0,
  );
}

interface TreeStats {
  treeBranchPageCount: number;
  treeLeafPageCount: number;
  overflowPages: number;
}

function freePageCount(freeList: FreeList): number {
  return freeList.runs.reduce((sum, run) => sum + run.count, 0);
}

/** How many pages at the end of the snapshot (from lastPage down) the free DB lists. */
function freeTailPages(freeList: FreeList): number {
  const run = freeList.runs.find((r) => r.first + r.count - 1 === freeList.lastPage);
  return run === undefined ? 0 : run.count;
}

interface Workload {
  dataDir: string;
  values: Map<number, Buffer>;
  freeList: FreeList;
}

/**
 * Writes a store as the service does (a named binary DB, puts and removes grouped in
 * transactions of varied size, values from a few bytes to several pages), checking after every
 * commit that the free list read from the file plus the pages the trees use account for every
 * page; then makes the last pages free.
 */
async function storeEndingInFreePages(seed: number): Promise<Workload> {
  const dataDir = tempDir();
  const random = generator(seed);
  const root = openStore(dataDir);
  const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
  const values = new Map<number, Buffer>();
  try {
    // Many scattered small records, half of them removed at once: the free DB then holds a
    // record too large for its page, on overflow pages.
    for (let commit = 0; commit < 20; commit++) {
      await log.transaction(() => {
        for (let i = 0; i < 400; i++) {
          const key = Math.floor(random() * 1e6);
          const value = Buffer.alloc(150 + Math.floor(random() * 100), commit);
          log.put(key, value);
          values.set(key, value);
        }
      });
    }
    await log.transaction(() => {
      for (const key of [...values.keys()]) {
        if (random() < 0.5) continue;
        log.remove(key);
        values.delete(key);
      }
    });
    assert.ok((root.getStats() as { free: TreeStats }).free.overflowPages > 0, 'the free DB uses overflow pages');
    const checkEveryPageAccounted = (after: string): FreeList => {
      const freeList = readFreeList(dataDir);
      assert.equal(pagesInUse(root, log) + freePageCount(freeList) + 2, freeList.lastPage + 1, `every page is used or free after ${after}`);
      assert.notEqual(inspectStore(dataDir).kind, 'missing');
      return freeList;
    };
    for (let commit = 0; commit < RANDOM_COMMITS; commit++) {
      await log.transaction(() => {
        const changes = 1 + Math.floor(random() * 40);
        for (let i = 0; i < changes; i++) {
          const key = Math.floor(random() * 400);
          if (values.has(key) && random() < 0.4) {
            log.remove(key);
            values.delete(key);
            continue;
          }
          const large = random() < 0.1;
          const value = Buffer.alloc(Math.floor(large ? 3000 + random() * 20_000 : random() * 400), commit % 256);
          log.put(key, value);
          values.set(key, value);
        }
      });
      checkEveryPageAccounted(`commit ${commit}`);
    }
    // A value longer than any free run goes on new pages at the end of the file; removing it
    // frees them. (The removal's own pages usually come from the free list, else try again.)
    for (let attempt = 0; attempt < MAX_TAIL_ATTEMPTS; attempt++) {
      const freeList = checkEveryPageAccounted(`attempt ${attempt}`);
      if (freeTailPages(freeList) > 0) return { dataDir, values, freeList };
      const longestRun = Math.max(0, ...freeList.runs.map((run) => run.count));
      await log.put(TAIL_KEY, Buffer.alloc((longestRun + 1) * freeList.pageSize, 1));
      checkEveryPageAccounted(`the put of attempt ${attempt}`);
      await log.remove(TAIL_KEY);
    }
    throw new Error(`no store ending in free pages after ${MAX_TAIL_ATTEMPTS} attempts`);
  } finally {
    await root.close();
  }
}

async function assertReadsEveryValue(dataDir: string, values: Map<number, Buffer>): Promise<void> {
  const root = openStore(dataDir);
  try {
    const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
    assert.equal(log.getCount(), values.size);
    for (const [key, value] of values) assert.deepEqual(log.get(key), value, `value of ${key}`);
    // And the store keeps taking writes: LMDB reuses or rewrites the pages it had left unwritten.
    await log.put(-1, Buffer.alloc(10_000, 7));
    assert.deepEqual(log.get(-1), Buffer.alloc(10_000, 7));
  } finally {
    await root.close();
  }
}

describe('a data.mdb shorter than its last page', { timeout: SUITE_TIMEOUT_MS }, () => {
  for (const seed of [1, 2, 3]) {
    it(`opens and reads every value when only free pages are missing (seed ${seed})`, async () => {
      const { dataDir, values, freeList } = await storeEndingInFreePages(seed);
      const path = join(dataDir, DATA_FILE);
      // What LMDB does with a page allocated at the end and freed in the same transaction:
      // the file stops before it.
      const shortSize = (freeList.lastPage + 1 - freeTailPages(freeList)) * freeList.pageSize;
      truncateSync(path, shortSize);
      assert.equal(inspectStore(dataDir).kind, 'records');
      await assertReadsEveryValue(dataDir, values);
      const reopened = new Map(values).set(-1, Buffer.alloc(10_000, 7));
      await assertReadsEveryValue(dataDir, reopened);
    });
  }

  it('is refused, naming the file, when the cut reaches a page in use', async () => {
    const { dataDir, freeList } = await storeEndingInFreePages(4);
    const path = join(dataDir, DATA_FILE);
    // The page before the free tail is not free (the tail run is the longest one).
    const cutSize = (freeList.lastPage - freeTailPages(freeList)) * freeList.pageSize;
    truncateSync(path, cutSize);
    const before = readFileSync(path);
    for (const attempt of [() => inspectStore(dataDir), () => openStore(dataDir)]) {
      assert.throws(attempt, (err: unknown) => {
        assert.ok(err instanceof StoreDamagedError);
        assert.ok(err.message.startsWith(`${path} is truncated: ${cutSize} bytes`), err.message);
        return true;
      });
    }
    assert.equal(statSync(path).size, cutSize, 'the store was not touched');
    assert.deepEqual(readFileSync(path), before);
  });

  it('is refused when a page is cut in half', async () => {
    const { dataDir, freeList } = await storeEndingInFreePages(5);
    const path = join(dataDir, DATA_FILE);
    const cutSize = (freeList.lastPage - freeTailPages(freeList)) * freeList.pageSize + freeList.pageSize / 2;
    truncateSync(path, cutSize);
    assert.throws(() => inspectStore(dataDir), (err: unknown) => err instanceof StoreDamagedError && err.message.includes('is truncated'));
  });
});
