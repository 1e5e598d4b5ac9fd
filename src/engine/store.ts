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
// shorter than the newest meta says is refused with a message naming it. (LMDB notes that a
// file may legitimately end before mm_last_pg when the final pages were freed in the
// transaction that allocated them; this lmdb build writes the file out to its last page:
// 3,000 commits of random puts and deletes, checked after each, never left one short.)
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';

export const DATA_FILE = 'data.mdb';

/**
 * The meta page layout of the LMDB bundled with lmdb 3.x (data format version 2), checked
 * against stores it wrote: a 24-byte page header (pgno, txnid, pad, flags, lower, upper),
 * then MDB_meta: magic u32, version u32, address u64, mapsize u64, MDB_db[2] (48 bytes
 * each: pad u32 (the page size, in the free DB's record), flags u16, depth u16, branch,
 * leaf and overflow page counts u64, entries u64, root u64), last_pg u64, txnid u64.
 * Meta page 0 starts the file, meta page 1 starts its second page.
 */
const PAGE_HEADER_BYTES = 24;
const MDB_MAGIC = 0xbeefc0de;
const MDB_DATA_VERSION = 2;
const META = {
  magic: 0,
  version: 4,
  pageSize: 24,
  mainEntries: 72 + 32,
  lastPage: 120,
  txnId: 128,
  end: 136,
} as const;
/** Bytes read for a meta page: its header and MDB_meta fit in far less. */
const META_READ_BYTES = 4096;

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
}

/** What `data.mdb` holds, read without opening LMDB (opening writes). */
export type StoreContents =
  | { kind: 'missing' }
  /** Zero bytes: LMDB would silently start a new store in it. */
  | { kind: 'zero-length' }
  /** A valid store with no records at all. */
  | { kind: 'empty' }
  | { kind: 'records'; entries: bigint };

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
  };
}

function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.alloc(length);
  const read = readSync(fd, buf, 0, length, position);
  return buf.subarray(0, read);
}

/**
 * Reads the two meta pages of `<dataDir>/data.mdb` and checks the file is as long as the
 * newest valid one says. Throws StoreDamagedError otherwise.
 */
export function inspectStore(dataDir: string): StoreContents {
  const path = join(dataDir, DATA_FILE);
  if (!existsSync(path)) return { kind: 'missing' };
  const size = statSync(path).size;
  if (size === 0) return { kind: 'zero-length' };
  const fd = openSync(path, 'r');
  let metas: Meta[];
  try {
    const first = readMeta(readAt(fd, META_READ_BYTES, 0));
    if (first === undefined) throw new StoreDamagedError(path, 'is not an LMDB data file of this version (meta page 0 is invalid)');
    const second = readMeta(readAt(fd, META_READ_BYTES, first.pageSize));
    metas = second === undefined ? [first] : [first, second];
  } finally {
    closeSync(fd);
  }
  // LMDB writes the two meta pages in turn; the one with the higher txnid is current.
  const newest = metas.reduce((a, b) => (b.txnId > a.txnId ? b : a));
  const expected = (newest.lastPage + 1n) * BigInt(newest.pageSize);
  if (BigInt(size) < expected) {
    throw new StoreDamagedError(path, `is truncated: ${size} bytes, but its newest meta page (transaction ${newest.txnId}) needs ${expected}`);
  }
  return newest.mainEntries === 0n ? { kind: 'empty' } : { kind: 'records', entries: newest.mainEntries };
}

/** Opens the LMDB environment in `dataDir` (a directory, whatever its name) after inspectStore. */
export function openStore(dataDir: string): RootDatabase {
  inspectStore(dataDir);
  return open({ path: dataDir, noSubdir: false, overlappingSync: true, separateFlushed: true });
}
