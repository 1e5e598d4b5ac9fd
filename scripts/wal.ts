#!/usr/bin/env node
// `payments-wal`: the write-ahead log and snapshot of a data directory, read-only, for people
// testing crash recovery and for operators. It takes no lock and writes nothing to data.mdb,
// so it runs beside a running service (src/engine/inspect.ts says how). Machine output is
// JSON on stdout and nothing else; messages and progress go to stderr.
import { writeSync } from 'node:fs';
import { parseCommandLine, UsageError } from './cli.js';
import { dataDirFrom } from '../src/config.js';
import { World } from '../actors/world.js';
import { StoreCorruptError } from '../src/engine/format.js';
import { BeforeSnapshotError, PastEndError, replayStore, selectedEntries, storeStats, verifyStore, type Progress } from '../src/engine/inspect.js';
import { toJsonValue } from '../src/engine/state-digest.js';
import { NoStoreError, withStore } from '../src/engine/store-reader.js';
import { StoreDamagedError } from '../src/engine/store.js';

const USAGE = `Usage: payments-wal <command> [--data DIR] [options]

Reads a data directory's write-ahead log and snapshot read-only: it takes no lock and
writes nothing to data.mdb, so it runs beside a running service.

Commands:
  stat
      The log: entries, stored values (each a commit group of at most 2,048 entries, or
      one entry in format version 1), values per format version, first and last sequence,
      bytes of the stored values, events per type. The snapshot: sequence, time, layout,
      generation and base, records per kind, pending timers, effects, idempotency records.
  verify
      Checks every log value (format version, checksum, shape), that the sequences run
      on without a gap from the snapshot's, and the snapshot (manifest, chunks, counts).
      Prints {ok, firstBadSeq, problems, log, snapshot}; exit status 1 when anything is
      wrong, with the first bad sequence named on stderr. A progress bar goes to stderr
      when it is a terminal.
  dump [--from SEQ] [--to SEQ] [--type TYPE]...
      One JSON object per line and log entry: {seq, at (ms), time (ISO), events}.
      --type keeps the entries holding an event of that type (all their events shown);
      give it again for more types.
  replay [--until SEQ]
      Rebuilds the state as of SEQ (default: the last sequence) from the latest snapshot
      at or before it and the log after it, as recovery does, without writing; checks
      every invariant. Prints {seq, fromSnapshot, replayed, digest, counts, violations}.
      Exit status 1 when an invariant does not hold, or when the state at SEQ is gone
      (the log before a later snapshot was removed when it was taken).

Options:
  --data DIR    the data directory (default: $DATA_DIR, else ./data/db)
  -h, --help    this text

Encoding: 16 bytes are {"$uuid": "<8-4-4-4-12 hex>"} (ids in hot events travel as their
UUID's bytes), other bytes {"$binary": "<base64>"}, big integers {"$bigint": "<decimal>"}.
digest.state is sha256 of the lines "records <hex>", "timers <hex>", "effects <hex>",
"idempotency <hex>"; each section's hex is sha256 of its items, one canonical JSON line
each (keys sorted): records as [id, record] by id, timers and effects by id, idempotency
records in insertion order. The same state gives the same digest on every run.

Exit status: 0 done (verify: sound), 1 the store is damaged or the state cannot be
rebuilt, 2 usage error.`;

/** The options each command accepts, besides --data and --help. */
const COMMAND_OPTIONS = {
  stat: [],
  verify: [],
  dump: ['from', 'to', 'type'],
  replay: ['until'],
} as const satisfies Record<string, readonly string[]>;
type Command = keyof typeof COMMAND_OPTIONS;

interface Invocation {
  command: Command;
  dataDir: string;
  from?: number;
  to?: number;
  until?: number;
  types: string[];
}

function sequenceOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} must be a sequence number (a whole number from 0), got ${JSON.stringify(value)}`);
  return n;
}

function isCommand(name: string | undefined): name is Command {
  return name !== undefined && Object.hasOwn(COMMAND_OPTIONS, name);
}

/** The invocation, or 'help'; a UsageError for anything else. */
function parse(args: string[]): Invocation | 'help' {
  const { values, positionals } = parseCommandLine({
    args,
    allowPositionals: true,
    options: {
      data: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      type: { type: 'string', multiple: true },
      until: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return 'help';
  const [command, ...extra] = positionals;
  if (command === undefined) throw new UsageError('no command given');
  if (!isCommand(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  if (extra.length > 0) throw new UsageError(`${command} takes no arguments, got ${JSON.stringify(extra.join(' '))}`);
  const allowed: readonly string[] = COMMAND_OPTIONS[command];
  for (const name of ['from', 'to', 'type', 'until'] as const) {
    if (values[name] !== undefined && !allowed.includes(name)) throw new UsageError(`--${name} is not an option of ${command}`);
  }
  const from = sequenceOption('from', values.from);
  const to = sequenceOption('to', values.to);
  if (from !== undefined && to !== undefined && from > to) throw new UsageError(`--from ${from} is after --to ${to}`);
  return {
    command,
    dataDir: dataDirFrom(process.env, values.data),
    from,
    to,
    until: sequenceOption('until', values.until),
    types: values.type ?? [],
  };
}

/**
 * Writes to stdout synchronously (a dump is read in one lmdb read transaction, which lasts
 * until the event loop turns); false once the reader has gone (EPIPE, as in `dump | head`),
 * which a stream would only report after the whole dump was written.
 */
function writeOut(text: string): boolean {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(1, bytes, offset);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return false;
      // A non-blocking stdout that is full: wait a moment for the reader.
      if (code === 'EAGAIN') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      else throw err;
    }
  }
  return true;
}

function writeJson(value: unknown): void {
  writeOut(JSON.stringify(toJsonValue(value, false, true), null, 2) + '\n');
}

/** Lines of a dump are gathered up to this many characters per write. */
const DUMP_WRITE_CHARS = 64 * 1024;

async function dump(invocation: Invocation): Promise<void> {
  const filter = { from: invocation.from ?? 0, to: invocation.to ?? Number.MAX_SAFE_INTEGER, types: new Set(invocation.types) };
  await withStore(invocation.dataDir, (store) => {
    let pending = '';
    for (const entry of selectedEntries(store, filter)) {
      pending += JSON.stringify(toJsonValue({ seq: entry.seq, at: entry.at, time: new Date(entry.at).toISOString(), events: entry.events }, false, true)) + '\n';
      if (pending.length >= DUMP_WRITE_CHARS) {
        if (!writeOut(pending)) return;
        pending = '';
      }
    }
    writeOut(pending);
  });
}

/** A progress bar on stderr, redrawn at most every PROGRESS_MS; `clear` removes it. */
function progressBar(): { update: Progress; clear: () => void } {
  const PROGRESS_MS = 100;
  const WIDTH = 30;
  let drawnAt = 0;
  let drawn = false;
  return {
    update: (done, total) => {
      const now = performance.now();
      if (now - drawnAt < PROGRESS_MS) return;
      drawnAt = now;
      drawn = true;
      const share = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(share * WIDTH);
      process.stderr.write(`\rverify: [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${Math.floor(share * 100)}% of the log\x1b[K`);
    },
    clear: () => {
      if (drawn) process.stderr.write('\r\x1b[K');
    },
  };
}

async function verify(invocation: Invocation): Promise<number> {
  const bar = process.stderr.isTTY ? progressBar() : undefined;
  let report;
  try {
    report = await verifyStore(invocation.dataDir, bar?.update);
  } finally {
    bar?.clear();
  }
  writeJson(report);
  if (report.ok) {
    const snapshot = report.snapshot === null ? 'no snapshot' : `the snapshot at ${report.snapshot.seq}`;
    process.stderr.write(`wal verify: sound: ${report.log.entries} log entries in ${report.log.values} values, ${snapshot}\n`);
    return 0;
  }
  const [first] = report.problems;
  const more = report.problems.length > 1 ? ` (and ${report.problems.length - 1} more problems)` : '';
  const seq = report.firstBadSeq === null ? '' : `first bad sequence ${report.firstBadSeq}: `;
  process.stderr.write(`wal verify: the store is damaged: ${seq}${first!.where}: ${first!.problem}${more}\n`);
  return 1;
}

async function replay(invocation: Invocation): Promise<number> {
  const report = await replayStore(invocation.dataDir, new World(), invocation.until);
  writeJson(report);
  if (report.violations.length === 0) return 0;
  process.stderr.write(`wal replay: invariants violated in the state at ${report.seq}:\n  ${report.violations.join('\n  ')}\n`);
  return 1;
}

async function run(invocation: Invocation): Promise<number> {
  switch (invocation.command) {
    case 'stat':
      writeJson(await storeStats(invocation.dataDir));
      return 0;
    case 'verify':
      return verify(invocation);
    case 'dump':
      await dump(invocation);
      return 0;
    case 'replay':
      return replay(invocation);
  }
}

/** What the store says stops a command: a damaged or missing store, a state it no longer holds. */
function storeRefusal(err: unknown): string | undefined {
  if (err instanceof StoreCorruptError) return `${err.where}: ${err.problem}; the store is damaged (wal verify lists every problem)`;
  if (err instanceof StoreDamagedError || err instanceof NoStoreError || err instanceof BeforeSnapshotError || err instanceof PastEndError) return err.message;
  return undefined;
}

async function main(): Promise<number> {
  let invocation;
  try {
    invocation = parse(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`payments-wal: ${err.message}\nRun "payments-wal --help" for usage.\n`);
    return 2;
  }
  if (invocation === 'help') {
    writeOut(USAGE + '\n');
    return 0;
  }
  try {
    return await run(invocation);
  } catch (err) {
    const refusal = storeRefusal(err);
    if (refusal === undefined) throw err;
    process.stderr.write(`wal ${invocation.command}: ${refusal}\n`);
    return 1;
  }
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (err: unknown) => {
    // A bug, not a finding about the store: its stack says where.
    process.stderr.write(`payments-wal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
