// Opening the LMDB environment of a data directory, with the checks LMDB itself does not make.
//
// The directory is always opened as a directory (`noSubdir: false`): lmdb-js otherwise takes a
// path whose last component has an extension (`/var/lib/payments.db`, `mktemp -d` names) for
// the data file itself. Stores written before keep opening: they are `data.mdb` and
// `lock.mdb` inside the directory either way.
//
// LMDB maps `data.mdb` and trusts its meta pages: a file cut short (a failed copy, a full
// disk) is only noticed when a page past the end is touched, and that is a SIGBUS that kills
// the process with no message. So before opening, the meta pages are read here and a file
// shorter than the newest meta says is refused with a message naming it, unless every page
// past its end is free. LMDB legitimately leaves such a tail: a page allocated at the end of
// the file and freed again in the same transaction (a loose page) is counted in mm_last_pg but
// never written (mdb_page_flush skips P_LOOSE pages). mdb_freelist_save puts the loose pages of
// the committing transaction into the free DB (in its own record, or in the reclaimed-pages
// records it rewrites) before the meta is written (it drops them only on a path it reports on
// stderr as an internal inconsistency), and mdb.c states the invariant this check relies on:
// every non-meta page up to mm_last_pg is either used by a tree or listed in the free DB. So a
// missing page that the free DB lists is never read; any other missing page is a real
// truncation, refused. Only the newest meta counts: LMDB opens that one (the previous snapshot
// only with MDB_PREVSNAPSHOT, which openStore does not set).
import { closeSync, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';

export const DATA_FILE = 'data.mdb';
/**
 * The directory, inside a data directory, of the snapshots' own LMDB environment: their
 * chunks never share a transaction or an fsync with the log's commits (storage.ts).
 */
export const SNAPSHOT_DIR = 'snapshots';

/**
 * The on-disk layout of the LMDB bundled with lmdb 3.x (data format version 2), from its mdb.c
 * (node_modules/lmdb/dependencies/lmdb/libraries/liblmdb) and checked against stores it wrote.
 * Every page starts with a 24-byte header: pgno u64, txnid u64, pad u16, flags u16, lower u16,
 * upper u16. A meta page then holds MDB_meta: magic u32, version u32, address u64, mapsize u64,
 * MDB_db[2] (the free DB, then the main DB; 48 bytes each: pad u32 (the page size, in the free
 * DB's record), flags u16, depth u16, branch, leaf and overflow page counts u64, entries u64,
 * root u64), last_pg u64, txnid u64. Meta page 0 starts the file, meta page 1 its second page.
 */
const PAGE_HEADER_BYTES = 24;
const MDB_MAGIC = 0xbeefc0de;
const MDB_DATA_VERSION = 2;
const META = {
  magic: 0,
  version: 4,
  pageSize: 24,
  freeDb: 24,
  mainDb: 72,
  mainEntries: 72 + 32,
  lastPage: 120,
  txnId: 128,
  end: 136,
} as const;
/** Offsets in an MDB_db record, and its length. */
const DB = { root: 40, bytes: 48 } as const;
/** Bytes read for a meta page: its header and MDB_meta fit in far less. */
const META_READ_BYTES = 4096;

/**
 * A B-tree page (mdb.c MDB_page, MDB_node): after the header, `lower / 2` u16 node offsets
 * (counted from the end of the header, PAGEBASE); a node is lo u16, hi u16, flags u16,
 * ksize u16, then the key and the data. A branch node's child is lo | hi << 16 | flags << 32;
 * a leaf node's data size is lo | hi << 16, and with F_BIGDATA its data is the u64 number of
 * the overflow page holding the value after that page's header.
 */
const PAGE = { pgno: 0, flags: 18, lower: 20 } as const;
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_OVERFLOW = 0x04;
const NODE_HEADER_BYTES = 8;
const F_BIGDATA = 0x01;
/** A main DB node whose value is the MDB_db record of a named database. */
const F_SUBDATA = 0x02;
/** mdb.c P_INVALID: the root of an empty tree. */
const NO_PAGE = 0xffffffffffffffffn;
/** mdb.c CURSOR_STACK: LMDB never builds a tree deeper than its cursors can walk. */
const MAX_TREE_DEPTH = 32;

export class StoreDamagedError extends Error {
  constructor(readonly path: string, detail: string) {
    super(`${path} ${detail}; refusing to open it (restore the data directory from a backup)`);
    this.name = 'StoreDamagedError';
  }
}

interface Meta {
  pageSize: number;
  lastPage: bigint;
  txnId: bigint;
  mainEntries: bigint;
  freeDbRoot: bigint;
  mainDbRoot: bigint;
}

/** What `data.mdb` holds, read without opening LMDB (opening writes). */
export type StoreContents =
  | { kind: 'missing' }
  /** Zero bytes: LMDB would silently start a new store in it. */
  | { kind: 'zero-length' }
  /** A valid store with no records at all. */
  | { kind: 'empty' }
  | { kind: 'records'; entries: bigint };

/** `count` consecutive pages from page `first`. */
export interface PageRun {
  first: number;
  count: number;
}

/** The free pages of the newest snapshot of a `data.mdb`, as its free DB lists them. */
export interface FreeList {
  pageSize: number;
  lastPage: number;
  /** Sorted by first page, not overlapping. */
  runs: PageRun[];
}

function readMeta(page: Buffer): Meta | undefined {
  const m = PAGE_HEADER_BYTES;
  if (page.length < m + META.end) return undefined;
  if (page.readUInt32LE(m + META.magic) !== MDB_MAGIC) return undefined;
  if ((page.readUInt32LE(m + META.version) & 0xffff) !== MDB_DATA_VERSION) return undefined;
  const pageSize = page.readUInt32LE(m + META.pageSize);
  // LMDB pages are a power of two, at least 512 bytes, at most 64 KiB.
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return undefined;
  return {
    pageSize,
    lastPage: page.readBigUInt64LE(m + META.lastPage),
    txnId: page.readBigUInt64LE(m + META.txnId),
    mainEntries: page.readBigUInt64LE(m + META.mainEntries),
    freeDbRoot: page.readBigUInt64LE(m + META.freeDb + DB.root),
    mainDbRoot: page.readBigUInt64LE(m + META.mainDb + DB.root),
  };
}

function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.alloc(length);
  const read = readSync(fd, buf, 0, length, position);
  return buf.subarray(0, read);
}

/** The open data file with its newest meta, read page by page with positional reads. */
class StoreFile {
  readonly lastPage: number;
  readonly #pagesInFile: number;

  constructor(
    readonly path: string,
    readonly fd: number,
    readonly size: number,
    readonly meta: Meta,
  ) {
    if (meta.lastPage > BigInt(Number.MAX_SAFE_INTEGER) / BigInt(meta.pageSize)) {
      throw new StoreDamagedError(path, `has an impossible last page ${meta.lastPage} in its newest meta page`);
    }
    this.lastPage = Number(meta.lastPage);
    this.#pagesInFile = Math.floor(size / meta.pageSize);
  }

  damaged(detail: string): StoreDamagedError {
    return new StoreDamagedError(this.path, detail);
  }

  /** Reads `count` pages from `pgno`; they must be within the file and the snapshot. */
  readPages(pgno: number, count: number, what: string): Buffer {
    if (pgno < 2 || pgno + count - 1 > this.lastPage) {
      throw this.damaged(`refers to ${what} ${pgno} outside its pages 2..${this.lastPage} (transaction ${this.meta.txnId})`);
    }
    if (pgno + count > this.#pagesInFile) {
      throw this.damaged(`is truncated: ${this.size} bytes, but ${what} ${pgno} (transaction ${this.meta.txnId}) is past its end`);
    }
    const length = count * this.meta.pageSize;
    const buf = readAt(this.fd, length, pgno * this.meta.pageSize);
    if (buf.length !== length) throw this.damaged(`could not be read at page ${pgno}`);
    return buf;
  }
}

/**
 * The free DB's values: an IDL, a u64 slot count then that many i64 slots, each a page number,
 * 0 (an unused slot) or -n followed by the first page of a run of n pages (midl.c
 * mdb_midl_xmerge reads them so).
 */
function addIdlRuns(file: StoreFile, idl: Buffer, runs: PageRun[]): void {
  if (idl.length < 8) throw file.damaged('has a free DB record shorter than its count');
  const slots = idl.readBigUInt64LE(0);
  if (slots > BigInt(Math.floor(idl.length / 8) - 1)) throw file.damaged(`has a free DB record of ${slots} pages in ${idl.length} bytes`);
  const end = 8 + Number(slots) * 8;
  for (let at = 8; at < end; at += 8) {
    const slot = idl.readBigInt64LE(at);
    if (slot === 0n) continue;
    let count = 1n;
    let first = slot;
    if (slot < 0n) {
      at += 8;
      if (at >= end) throw file.damaged('has a free DB record ending in a run length');
      count = -slot;
      first = idl.readBigInt64LE(at);
    }
    if (first < 2n || first + count - 1n > file.meta.lastPage) {
      throw file.damaged(`lists free pages ${first}..${first + count - 1n} outside its pages 2..${file.lastPage}`);
    }
    runs.push({ first: Number(first), count: Number(count) });
  }
}

/** A leaf node of a B-tree: its key, node flags, and value (read from its overflow pages when big). */
interface LeafNode {
  key: Buffer;
  flags: number;
  value: Buffer;
}

/**
 * Walks the B-tree `tree` (its name in messages) from `root` and calls `visitLeaf` for every
 * leaf node. Every page is read once at most (a page reached twice is damage), so the reads
 * are bounded by the pages of the file, and the walk by MAX_TREE_DEPTH levels.
 */
function walkTree(file: StoreFile, tree: string, root: bigint, visitLeaf: (node: LeafNode) => void): void {
  if (root === NO_PAGE) return;
  const visited = new Set<number>();
  const pageSize = file.meta.pageSize;
  const toPageNumber = (pgno: bigint, what: string): number => {
    if (pgno > BigInt(file.lastPage)) throw file.damaged(`refers to ${what} ${pgno} past its last page ${file.lastPage}`);
    return Number(pgno);
  };
  const visit = (pgno: number, level: number): void => {
    if (visited.has(pgno)) throw file.damaged(`reaches ${tree} page ${pgno} twice`);
    visited.add(pgno);
    const page = file.readPages(pgno, 1, `${tree} page`);
    const flags = page.readUInt16LE(PAGE.flags);
    const isBranch = (flags & P_BRANCH) !== 0;
    const isLeaf = (flags & P_LEAF) !== 0;
    if (page.readBigUInt64LE(PAGE.pgno) !== BigInt(pgno) || isBranch === isLeaf) {
      throw file.damaged(`has ${tree} page ${pgno} that is not the tree page its parent says`);
    }
    if (isBranch && level === MAX_TREE_DEPTH) throw file.damaged(`has a ${tree} deeper than ${MAX_TREE_DEPTH} levels`);
    const nodes = page.readUInt16LE(PAGE.lower) >> 1;
    if (PAGE_HEADER_BYTES + nodes * 2 > pageSize) throw file.damaged(`has ${tree} page ${pgno} with ${nodes} nodes`);
    for (let i = 0; i < nodes; i++) {
      const node = PAGE_HEADER_BYTES + page.readUInt16LE(PAGE_HEADER_BYTES + i * 2);
      if (node + NODE_HEADER_BYTES > pageSize) throw file.damaged(`has ${tree} page ${pgno} with a node past its end`);
      const lo = page.readUInt16LE(node);
      const hi = page.readUInt16LE(node + 2);
      const nodeFlags = page.readUInt16LE(node + 4);
      const keyStart = node + NODE_HEADER_BYTES;
      const data = keyStart + page.readUInt16LE(node + 6);
      if (isBranch) {
        const child = BigInt(lo) | (BigInt(hi) << 16n) | (BigInt(nodeFlags) << 32n);
        visit(toPageNumber(child, `${tree} page`), level + 1);
        continue;
      }
      const key = page.subarray(keyStart, data);
      const size = lo + hi * 0x10000;
      if ((nodeFlags & F_BIGDATA) === 0) {
        if (data + size > pageSize) throw file.damaged(`has ${tree} page ${pgno} with a record past its end`);
        visitLeaf({ key, flags: nodeFlags, value: page.subarray(data, data + size) });
        continue;
      }
      if (data + 8 > pageSize) throw file.damaged(`has ${tree} page ${pgno} with a record past its end`);
      const overflow = toPageNumber(page.readBigUInt64LE(data), `${tree} overflow page`);
      if (visited.has(overflow)) throw file.damaged(`reaches ${tree} page ${overflow} twice`);
      visited.add(overflow);
      // mdb.c OVPAGES: the header and the value, rounded up to whole pages.
      const pages = Math.floor((PAGE_HEADER_BYTES - 1 + size) / pageSize) + 1;
      const value = file.readPages(overflow, pages, `${tree} overflow page`);
      if ((value.readUInt16LE(PAGE.flags) & P_OVERFLOW) === 0 || value.readBigUInt64LE(PAGE.pgno) !== BigInt(overflow)) {
        throw file.damaged(`has ${tree} page ${overflow} that is not the overflow page its record says`);
      }
      visitLeaf({ key, flags: nodeFlags, value: value.subarray(PAGE_HEADER_BYTES, PAGE_HEADER_BYTES + size) });
    }
  };
  visit(toPageNumber(root, `${tree} root page`), 1);
}

/**
 * The free page runs the free DB lists. Only a file shorter than its last page is walked, so
 * opening a store of normal length reads nothing more for it.
 */
function readFreeRuns(file: StoreFile): PageRun[] {
  const runs: PageRun[] = [];
  walkTree(file, 'free DB', file.meta.freeDbRoot, (node) => addIdlRuns(file, node.value, runs));
  return mergeRuns(runs);
}

/**
 * Sorts runs and joins adjacent or overlapping ones. (LMDB's own reader, mdb_page_alloc,
 * skips a page listed twice rather than failing, so it is not treated as damage here.)
 */
function mergeRuns(runs: PageRun[]): PageRun[] {
  runs.sort((a, b) => a.first - b.first);
  const merged: PageRun[] = [];
  for (const run of runs) {
    const last = merged[merged.length - 1];
    if (last !== undefined && run.first <= last.first + last.count) {
      last.count = Math.max(last.count, run.first + run.count - last.first);
    } else {
      merged.push({ ...run });
    }
  }
  return merged;
}

/** The first page from `from` through `to` that no run lists, or undefined if all are free. */
function firstPageInUse(runs: PageRun[], from: number, to: number): number | undefined {
  let next = from;
  for (const run of runs) {
    if (run.first > next) break;
    next = Math.max(next, run.first + run.count);
    if (next > to) return undefined;
  }
  return next;
}

/** Runs `read` on the data file at `path` (`size` bytes) with its newest valid meta page. */
function withStoreFile<T>(path: string, size: number, read: (file: StoreFile) => T): T {
  const fd = openSync(path, 'r');
  try {
    const first = readMeta(readAt(fd, META_READ_BYTES, 0));
    if (first === undefined) throw new StoreDamagedError(path, 'is not an LMDB data file of this version (meta page 0 is invalid)');
    const second = readMeta(readAt(fd, META_READ_BYTES, first.pageSize));
    // LMDB writes the two meta pages in turn; the one with the higher txnid is current.
    const newest = second !== undefined && second.txnId > first.txnId ? second : first;
    return read(new StoreFile(path, fd, size, newest));
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads the two meta pages of `<dataDir>/data.mdb` and checks the file holds every page of the
 * newest valid one that is not free. Throws StoreDamagedError otherwise.
 */
export function inspectStore(dataDir: string): StoreContents {
  const path = join(dataDir, DATA_FILE);
  if (!existsSync(path)) return { kind: 'missing' };
  const size = statSync(path).size;
  if (size === 0) return { kind: 'zero-length' };
  const newest = withStoreFile(path, size, (file) => {
    const { meta } = file;
    const expected = (meta.lastPage + 1n) * BigInt(meta.pageSize);
    if (BigInt(size) >= expected) return meta;
    // Pages from the first one the file does not hold whole through lastPage must be free.
    const firstMissing = Math.floor(size / meta.pageSize);
    const inUse = firstMissing < 2 ? firstMissing : firstPageInUse(readFreeRuns(file), firstMissing, file.lastPage);
    if (inUse !== undefined) {
      throw file.damaged(`is truncated: ${size} bytes, but its newest meta page (transaction ${meta.txnId}) needs ${expected} and page ${inUse} past the end is not free`);
    }
    return meta;
  });
  return newest.mainEntries === 0n ? { kind: 'empty' } : { kind: 'records', entries: newest.mainEntries };
}

/** The free pages of the newest snapshot in `<dataDir>/data.mdb`, read without opening LMDB. */
export function readFreeList(dataDir: string): FreeList {
  const path = join(dataDir, DATA_FILE);
  return withStoreFile(path, statSync(path).size, (file) => ({
    pageSize: file.meta.pageSize,
    lastPage: file.lastPage,
    runs: readFreeRuns(file),
  }));
}

/**
 * The value under `key` in the named database `name` of `<dataDir>/data.mdb`, as of its
 * newest snapshot, read without opening LMDB (opening writes): undefined when the file, the
 * database or the key is not there. For small databases: it walks every page of both trees.
 */
export function readNamedValue(dataDir: string, name: string, key: Uint8Array): Buffer | undefined {
  const path = join(dataDir, DATA_FILE);
  if (!existsSync(path)) return undefined;
  const size = statSync(path).size;
  if (size === 0) return undefined;
  return withStoreFile(path, size, (file) => {
    const find = (tree: string, root: bigint, wanted: Uint8Array): LeafNode | undefined => {
      let found: LeafNode | undefined;
      walkTree(file, tree, root, (node) => {
        if (node.key.equals(wanted)) found = node;
      });
      return found;
    };
    // This LMDB keys a named database by its name with the terminating NUL (mdb_dbi_open: size = strlen(name) + 1).
    const record = find('main DB', file.meta.mainDbRoot, Buffer.from(`${name}\0`, 'utf8'));
    if (record === undefined) return undefined;
    if ((record.flags & F_SUBDATA) === 0 || record.value.length !== DB.bytes) {
      throw file.damaged(`has a main DB record ${name} that is not a named database`);
    }
    return find(`${name} DB`, record.value.readBigUInt64LE(DB.root), key)?.value;
  });
}

/**
 * The address space reserved for the store. LMDB grows a full map by remapping it, which
 * stops every writer (a full snapshot of a million records stalled the event loop 250-311
 * ms each time); reserving it up front costs only virtual memory (data.mdb grows with
 * what is written), and lmdb still grows the map past it if a store ever needs more.
 */
export const STORE_MAP_BYTES = 16 * 2 ** 30;

/**
 * Opens the LMDB environment in `dataDir` (a directory, whatever its name) after inspectStore.
 * A new data.mdb and lock.mdb are made 0600 (lmdb's default is 0664): the store holds every
 * customer's data. `permissionsMode` is read by lmdb's native open (src/env.cpp), though its
 * typings leave it out.
 */
export function openStore(dataDir: string): RootDatabase {
  inspectStore(dataDir);
  const options: RootDatabaseOptionsWithPath & { permissionsMode: number } = {
    path: dataDir,
    noSubdir: false,
    overlappingSync: true,
    separateFlushed: true,
    mapSize: STORE_MAP_BYTES,
    permissionsMode: 0o600,
  };
  return open(options);
}

/** Opens (creating it if missing) the snapshots' LMDB environment in `<dataDir>/snapshots`, with openStore's checks. */
export function openSnapshotStore(dataDir: string): RootDatabase {
  const dir = join(dataDir, SNAPSHOT_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return openStore(dir);
}
