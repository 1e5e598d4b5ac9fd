// `payments-wal` (scripts/wal.ts) against stores the service really wrote: stat's counts,
// verify naming the first bad sequence of a damaged copy, dump's filters, replay's digests
// (one per prefix, the same on every run, the service's own state at the last sequence, the
// same through a snapshot as through the log), and all of it beside a running service
// without changing a byte of data.mdb.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import { ManualClock } from '../src/engine/clock.js';
import { QUOTE_LIFETIME_MS } from '../actors/quote.js';
import type { ReplayReport, StoreStats, VerifyReport } from '../src/engine/inspect.js';
import { stateDigests, toJsonValue } from '../src/engine/state-digest.js';
import { createCustomer } from './support/assertions.js';
import { createQuote, fundedCustomer, quoteBody, until } from './support/money.js';
import { startTestService, type TestService } from './support/service.js';

/** A store written by commit 5fb4518 (test/store-upgrade.test.ts): log format version 1, the older snapshot layout. */
const FIXTURE = fileURLToPath(new URL('../../test/fixtures/store-5fb4518', import.meta.url));
// dist/test/wal-tool.test.js -> dist/scripts/wal.js
const WAL = fileURLToPath(new URL('../scripts/wal.js', import.meta.url));
/** A command that hangs is killed rather than hanging the suite. */
const COMMAND_TIMEOUT_MS = 60_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the tool in its own process without blocking this one (an in-process service goes on serving meanwhile). */
function wal(args: readonly string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [WAL, ...args], { timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 64 * 2 ** 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The tool's one JSON document, after checking it exited with `code`. */
async function walJson<T>(args: readonly string[], code = 0): Promise<{ out: T; stderr: string }> {
  const ran = await wal(args);
  assert.equal(ran.code, code, `wal ${args.join(' ')} exited ${ran.code}: ${ran.stderr}`);
  return { out: JSON.parse(ran.stdout) as T, stderr: ran.stderr };
}

interface DumpLine {
  seq: number;
  at: number;
  time: string;
  events: Array<{ type: string } & Record<string, unknown>>;
}

async function dumpLines(args: readonly string[]): Promise<DumpLine[]> {
  const ran = await wal(['dump', ...args]);
  assert.equal(ran.code, 0, ran.stderr);
  return ran.stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as DumpLine);
}

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/**
 * Money moving, quotes with expiry timers pending, and requests under Idempotency-Key: every
 * section of the state has items. The last entry only changes a record's content, so the
 * state before it has as many records of each kind.
 */
async function writeHistory(svc: TestService, tag: string): Promise<void> {
  const payer = await fundedCustomer(svc, 100_000, { platformCustomerId: `${tag}-payer` });
  const payee = await fundedCustomer(svc, 0, { platformCustomerId: `${tag}-payee` });
  await createQuote(svc, quoteBody(payer.usd.id, payee.usd.id, 1_000), { 'Idempotency-Key': `${tag}-quote` });
  const third = await createCustomer(svc, { platformCustomerId: `${tag}-third`, fullName: 'Old Name' });
  const renamed = await svc.request('PATCH', `/customers/${third.id}`, { body: { customerType: 'INDIVIDUAL', fullName: 'New Name' } });
  assert.equal(renamed.status, 200, renamed.text);
}

/**
 * A copy of a data directory, as a backup would take it: without lock.mdb, which holds the
 * live process's reader table and mutexes and is no part of the store (LMDB makes a new one).
 */
function copyOf(dataDir: string, prefix: string): string {
  const copy = tempDir(prefix);
  cpSync(dataDir, copy, { recursive: true, filter: (path) => !path.endsWith('lock.mdb') });
  return copy;
}

/** Each file of a directory but lock.mdb (LMDB's reader table, which every reader writes by design): size, mtime and sha256. */
function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const stat = statSync(path);
    if (name === 'lock.mdb' || !stat.isFile()) continue;
    out[name] = `${stat.size} ${stat.mtimeMs} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
  }
  return out;
}

/** Flips a byte in the payload of the log value stored under `key`, wherever its bytes lie in data.mdb (old page copies too); returns how many copies. */
function flipLogValueByte(dataDir: string, key: number): number {
  const root = open({ path: dataDir, noSubdir: false, readOnly: true });
  const value = Buffer.from(root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' }).get(key)!);
  void root.close();
  const path = join(dataDir, 'data.mdb');
  const file = readFileSync(path);
  const target = 5 + Math.floor((value.length - 5) / 2);
  let copies = 0;
  for (let at = file.indexOf(value); at >= 0; at = file.indexOf(value, at + 1)) {
    file[at + target] = file[at + target]! ^ 0xff;
    copies++;
  }
  writeFileSync(path, file);
  return copies;
}

describe('state digests', () => {
  const record = { id: 'Customer:1', name: 'Ada', sealed: new Uint8Array([1, 2, 3]), big: 2n ** 70n, nested: { a: 1, b: [1, undefined] } };
  const state = { records: [['Customer:1', record] as const, ['Customer:2', { id: 'Customer:2' }] as const], timers: [], effects: [], idempotency: [] };

  it('depend on the content of the state, not on the order of properties or of the records listed', () => {
    const reordered = { nested: { b: [1, undefined], a: 1 }, big: 2n ** 70n, sealed: new Uint8Array([1, 2, 3]), name: 'Ada', id: 'Customer:1', gone: undefined };
    const same = { ...state, records: [['Customer:2', { id: 'Customer:2' }] as const, ['Customer:1', reordered] as const] };
    assert.deepEqual(stateDigests(same), stateDigests(state));
    for (const changed of [{ ...record, name: 'Bob' }, { ...record, sealed: new Uint8Array([1, 2, 4]) }, { ...record, big: 2n ** 70n + 1n }, { ...record, nested: { a: 1, b: [1, null, 2] } }]) {
      const other = stateDigests({ ...state, records: [['Customer:1', changed] as const, state.records[1]!] });
      assert.notEqual(other.records, stateDigests(state).records);
      assert.notEqual(other.state, stateDigests(state).state);
    }
  });

  it('encode bytes and big integers as tagged JSON, and refuse what JSON cannot carry', () => {
    assert.deepEqual(toJsonValue(record, true), { big: { $bigint: '1180591620717411303424' }, id: 'Customer:1', name: 'Ada', nested: { a: 1, b: [1, null] }, sealed: { $binary: 'AQID' } });
    assert.throws(() => toJsonValue({ map: new Map() }, true), /cannot encode a Map/);
  });
});

describe('payments-wal', { timeout: 300_000 }, () => {
  const clock = new ManualClock(Date.UTC(2026, 6, 1));
  let svc: TestService;
  after(async () => {
    await svc?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  before(async () => {
    // Snapshots only when a test takes one: the clock moves past the usual 5-minute interval.
    svc = await startTestService({ clock, dataDir: tempDir('wal-tool-'), snapshotEverySeconds: 86_400 });
    // Two quotes of two payers expire in one clock step: their timers decide in one event-loop
    // turn, so their entries share a commit group (one log value).
    const payee = await fundedCustomer(svc, 0, { platformCustomerId: 'early-payee' });
    const expiring: string[] = [];
    for (const tag of ['early-1', 'early-2']) {
      const payer = await fundedCustomer(svc, 10_000, { platformCustomerId: tag });
      expiring.push((await createQuote(svc, quoteBody(payer.usd.id, payee.usd.id, 100))).id);
    }
    clock.advance(QUOTE_LIFETIME_MS + 1);
    await until(svc, () => expiring.every((id) => svc.service.services.world.quotes.get(id)?.status === 'EXPIRED'), 'the quotes expire');
    await writeHistory(svc, 'a');
    await svc.service.services.engine.settled();
  });

  it('stat counts the entries, values, bounds and event types of the log', async () => {
    const engine = svc.service.services.engine;
    const { out } = await walJson<StoreStats>(['stat', '--data', svc.dataDir]);
    assert.equal(out.log.firstSeq, 1);
    assert.equal(out.log.lastSeq, engine.lastSeq);
    assert.equal(out.log.entries, engine.lastSeq);
    // Each request's entry is a value of its own; the two expiries share one.
    assert.equal(out.log.values, engine.lastSeq - 1);
    // Each quote is logged in a value of its own, laid out in a row (format version 4).
    const quotes = out.log.eventTypes['quote.decided'] ?? 0;
    assert.ok(quotes > 0);
    assert.deepEqual(out.log.valuesByFormat, { '2': out.log.values - quotes, '4': quotes });
    assert.ok(out.log.bytes > 100 * out.log.values, `${out.log.bytes} bytes`);
    // The default platform's two environments, the three customers of the expiring quotes and those writeHistory made.
    assert.equal(out.log.eventTypes['platform.env.created'], 2);
    assert.equal(out.log.eventTypes['customer.opened'], 6);
    assert.equal(out.log.eventTypes['customer.updated'], 1);
    assert.equal(out.log.eventTypes['quote.changed'], 2);
    assert.equal(out.log.eventTypes['$timer.done'], 2);
    assert.equal(out.log.eventTypes['$idempotency'], 1);
    assert.equal(out.snapshot, null);
  });

  it('dump selects entries by sequence and event type, one JSON object a line, bytes in base64 and ids in hot events as UUIDs', async () => {
    const last = svc.service.services.engine.lastSeq;
    assert.deepEqual((await dumpLines(['--data', svc.dataDir, '--from', '2', '--to', '4'])).map((line) => line.seq), [2, 3, 4]);
    assert.deepEqual((await dumpLines(['--data', svc.dataDir, '--from', String(last - 1)])).map((line) => line.seq), [last - 1, last]);
    const all = await dumpLines(['--data', svc.dataDir]);
    assert.deepEqual(all.map((line) => line.seq), Array.from({ length: last }, (_, i) => i + 1));
    for (const line of all) assert.equal(line.time, new Date(line.at).toISOString());

    const opened = await dumpLines(['--data', svc.dataDir, '--type', 'customer.opened']);
    assert.equal(opened.length, 6);
    for (const line of opened) assert.ok(line.events.some((event) => event.type === 'customer.opened'));
    const either = await dumpLines(['--data', svc.dataDir, '--type', 'customer.opened', '--type', '$idempotency']);
    assert.equal(either.length, 7);
    assert.deepEqual(await dumpLines(['--data', svc.dataDir, '--type', 'no.such.event']), []);

    // The first entry creates the environments, whose webhook keys are sealed bytes.
    const sealed = /"\$binary":"([A-Za-z0-9+/=]+)"/.exec(JSON.stringify(all[0]));
    assert.ok(sealed, 'bytes are written as {"$binary": base64}');
    assert.ok(Buffer.from(sealed[1]!, 'base64').length > 16);
    // A quote's entry carries its id as the UUID's 16 bytes, which the dump shows as the UUID.
    const decided = all.find((line) => line.events.some((event) => event.type === 'quote.decided'));
    const uuid = /"\$uuid":"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"/.exec(JSON.stringify(decided));
    assert.ok(uuid, 'ids in hot events are written as {"$uuid": "8-4-4-4-12"}');
    assert.ok(svc.service.services.world.quotes.get(`Quote:${uuid[1]}`), `Quote:${uuid[1]} is a quote the service made`);
  });

  it('replay gives one digest per prefix, the same on every run, and at the last sequence the state the service serves', async () => {
    const { engine, world } = svc.service.services;
    const last = engine.lastSeq;
    const first = (await walJson<ReplayReport>(['replay', '--data', svc.dataDir])).out;
    const again = (await walJson<ReplayReport>(['replay', '--data', svc.dataDir, '--until', String(last)])).out;
    const shorter = (await walJson<ReplayReport>(['replay', '--data', svc.dataDir, '--until', String(last - 1)])).out;
    assert.equal(first.seq, last);
    assert.equal(first.replayed, last);
    assert.equal(first.fromSnapshot, null);
    assert.deepEqual(first.violations, []);
    assert.deepEqual(again, first);
    assert.equal(shorter.seq, last - 1);
    assert.deepEqual(shorter.counts, first.counts, 'the last entry changed a record, not how many there are');
    assert.notEqual(shorter.digest.records, first.digest.records);
    assert.notEqual(shorter.digest.state, first.digest.state);

    // What the service holds and serves: its records, its pending items, its lists.
    assert.equal(first.digest.records, stateDigests({ records: world.capture(), timers: [], effects: [], idempotency: [] }).records);
    assert.equal(first.counts.timers, engine.pendingTimers);
    assert.equal(first.counts.effects, engine.pendingEffects);
    assert.equal(first.counts.idempotencyRecords, engine.idempotencyRecords);
    assert.ok(first.counts.timers > 0 && first.counts.idempotencyRecords > 0, 'every section has items');
    const customers = await svc.request<{ totalCount: number }>('GET', '/customers');
    assert.equal(first.counts.records.Customer, customers.body.totalCount);
    const transactions = await svc.request<{ totalCount: number }>('GET', '/transactions');
    assert.equal(first.counts.records.Transaction, transactions.body.totalCount);
  });

  it('verify passes a sound store and names the first bad sequence of a flipped byte or a missing value', async () => {
    const sound = await walJson<VerifyReport>(['verify', '--data', svc.dataDir]);
    assert.equal(sound.out.ok, true);
    assert.equal(sound.out.log.entries, svc.service.services.engine.lastSeq);
    assert.match(sound.stderr, /^wal verify: sound/);

    const copy = copyOf(svc.dataDir, 'wal-flipped-');
    const bad = 3;
    assert.ok(flipLogValueByte(copy, bad) >= 1, 'the value was found in data.mdb');
    const flipped = await walJson<VerifyReport>(['verify', '--data', copy], 1);
    assert.equal(flipped.out.ok, false);
    assert.equal(flipped.out.firstBadSeq, bad);
    assert.deepEqual(flipped.out.problems, [{ seq: bad, where: `log entry ${bad}`, problem: `checksum mismatch (its value held entry ${bad})` }]);
    assert.match(flipped.stderr, new RegExp(`first bad sequence ${bad}: log entry ${bad}: checksum mismatch`));
    // The other commands refuse the damaged value, naming it, and read what lies before it.
    const replayed = await wal(['replay', '--data', copy]);
    assert.equal(replayed.code, 1);
    assert.equal(replayed.stdout, '');
    assert.match(replayed.stderr, new RegExp(`log entry ${bad}: checksum mismatch`));
    assert.equal((await dumpLines(['--data', copy, '--to', String(bad - 1)])).length, bad - 1);

    const gap = copyOf(svc.dataDir, 'wal-gap-');
    const root = open({ path: gap, noSubdir: false });
    await root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' }).remove(bad + 1);
    await root.close();
    const missing = await walJson<VerifyReport>(['verify', '--data', gap], 1);
    assert.equal(missing.out.firstBadSeq, bad + 1);
    assert.equal(missing.out.problems[0]!.problem, `missing (the log goes on at ${bad + 2})`);
    const replayedOverGap = await wal(['replay', '--data', gap]);
    assert.equal(replayedOverGap.code, 1);
    assert.match(replayedOverGap.stderr, new RegExp(`log entry ${bad + 1}: missing \\(the log goes on at ${bad + 2}\\)`));
  });

  it('runs beside the running service while it writes, and changes no file of the data directory', async () => {
    // The service holds the data directory's lock the whole time.
    const writing = Promise.all(Array.from({ length: 40 }, (_, i) => createCustomer(svc, { platformCustomerId: `beside-${i}` })));
    const [stat, verify, replay, dump] = await Promise.all([
      wal(['stat', '--data', svc.dataDir]),
      wal(['verify', '--data', svc.dataDir]),
      wal(['replay', '--data', svc.dataDir]),
      wal(['dump', '--data', svc.dataDir, '--type', 'customer.opened']),
    ]);
    await writing;
    for (const ran of [stat, verify, replay, dump]) assert.equal(ran.code, 0, ran.stderr);
    assert.equal((JSON.parse(verify.stdout) as VerifyReport).ok, true);
    assert.deepEqual((JSON.parse(replay.stdout) as ReplayReport).violations, []);
    assert.equal((await svc.request('GET', '/customers')).status, 200, 'the service goes on');

    const stopped = copyOf(svc.dataDir, 'wal-stopped-');
    const before = filesOf(stopped);
    assert.ok(before['data.mdb'] !== undefined);
    for (const args of [['stat'], ['verify'], ['replay'], ['replay', '--until', '3'], ['dump']]) {
      assert.equal((await wal([...args, '--data', stopped])).code, 0);
    }
    assert.deepEqual(filesOf(stopped), before);
  });

  it('replays through a snapshot to the digest the log gave, and says when the log before one is gone', async () => {
    const engine = svc.service.services.engine;
    await writeHistory(svc, 'b');
    await engine.settled();
    const seq = engine.lastSeq;
    const fromLog = (await walJson<ReplayReport>(['replay', '--data', svc.dataDir, '--until', String(seq)])).out;
    assert.equal(fromLog.fromSnapshot, null);
    await engine.snapshot();
    assert.equal(engine.snapshotSeq, seq);
    await writeHistory(svc, 'c');
    await engine.settled();

    const fromSnapshot = (await walJson<ReplayReport>(['replay', '--data', svc.dataDir, '--until', String(seq)])).out;
    assert.equal(fromSnapshot.fromSnapshot, seq);
    assert.equal(fromSnapshot.replayed, 0);
    assert.deepEqual(fromSnapshot.digest, fromLog.digest);
    const latest = (await walJson<ReplayReport>(['replay', '--data', svc.dataDir])).out;
    assert.equal(latest.replayed, engine.lastSeq - seq);
    assert.equal(latest.digest.records, stateDigests({ records: svc.service.services.world.capture(), timers: [], effects: [], idempotency: [] }).records);

    const { out } = await walJson<StoreStats>(['stat', '--data', svc.dataDir]);
    assert.equal(out.snapshot?.seq, seq);
    assert.equal(out.snapshot?.layout, 'chunks');
    assert.equal(out.snapshot?.records.Customer, fromLog.counts.records.Customer);
    assert.equal(out.snapshot?.timers, fromLog.counts.timers);
    assert.equal(out.log.lastSeq, engine.lastSeq);

    const gone = await wal(['replay', '--data', svc.dataDir, '--until', String(seq - 1)]);
    assert.equal(gone.code, 1);
    assert.equal(gone.stdout, '');
    assert.match(gone.stderr, new RegExp(`the state at ${seq - 1} cannot be rebuilt: the log up to ${seq} was removed when the snapshot at ${seq} was taken`));
    const past = await wal(['replay', '--data', svc.dataDir, '--until', String(engine.lastSeq + 1)]);
    assert.equal(past.code, 1);
    assert.match(past.stderr, new RegExp(`the store ends at sequence ${engine.lastSeq}`));
  });

  it('verify draws a progress bar on stderr only when it is a terminal', { skip: spawnSync('script', ['--version']).status !== 0 && 'no script(1) to make a terminal' }, async () => {
    const plain = await wal(['verify', '--data', svc.dataDir]);
    assert.equal(plain.code, 0);
    assert.doesNotMatch(plain.stderr, /verify: \[/);
    // script(1) runs the tool on a pseudo-terminal and copies what it wrote there to stdout.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(WAL)} verify --data ${JSON.stringify(svc.dataDir)}`;
    const onTerminal = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
    assert.equal(onTerminal.status, 0, onTerminal.stderr);
    assert.match(onTerminal.stdout, /\rverify: \[[#-]{30}\] \d+% of the log/);
    assert.match(onTerminal.stdout, /\r\x1b\[K/, 'the bar is cleared');
  });

  it('reads a store written by older code (format version 1, the older snapshot layout) into the state the service recovers', async () => {
    const dataDir = copyOf(FIXTURE, 'wal-fixture-');
    // The store lacks databases the service creates at its first open: read-only, none is created.
    const untouched = filesOf(dataDir);
    const stat = (await walJson<StoreStats>(['stat', '--data', dataDir])).out;
    assert.deepEqual(stat.log.valuesByFormat, { '1': stat.log.entries });
    assert.equal(stat.snapshot?.layout, 'older');
    assert.equal(stat.log.firstSeq, stat.snapshot.seq + 1);
    assert.equal((await walJson<VerifyReport>(['verify', '--data', dataDir])).out.ok, true);
    const replayed = (await walJson<ReplayReport>(['replay', '--data', dataDir])).out;
    assert.equal(replayed.fromSnapshot, stat.snapshot.seq);
    assert.equal(replayed.seq, stat.log.lastSeq);
    assert.deepEqual(replayed.violations, []);
    assert.equal((await dumpLines(['--data', dataDir])).length, stat.log.entries);
    assert.deepEqual(filesOf(dataDir), untouched);

    const now = (JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8')) as { now: number }).now;
    const recovered = await startTestService({ clock: new ManualClock(now), dataDir });
    try {
      const { engine, world } = recovered.service.services;
      assert.equal(replayed.digest.records, stateDigests({ records: world.capture(), timers: [], effects: [], idempotency: [] }).records);
      assert.equal(replayed.counts.timers, engine.pendingTimers);
    } finally {
      await recovered.stop({ keepData: true });
    }
  });

  it('--help prints the usage on stdout; a bad option, command or value is a usage error with status 2', async () => {
    const help = await wal(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: payments-wal <command>/);
    assert.match(help.stdout, /dump \[--from SEQ\] \[--to SEQ\] \[--type TYPE\]/);
    assert.equal(help.stderr, '');
    const cases: Array<[string[], RegExp]> = [
      [[], /no command given/],
      [['frobnicate'], /unknown command "frobnicate"/],
      [['stat', '--bogus'], /Unknown option '--bogus'/],
      [['stat', '--from', '3'], /--from is not an option of stat/],
      [['replay', '--until', 'ten'], /--until must be a sequence number/],
      [['dump', '--from', '9', '--to', '3'], /--from 9 is after --to 3/],
      [['dump', '--data'], /argument missing/],
      [['stat', 'extra'], /stat takes no arguments/],
    ];
    for (const [args, message] of cases) {
      const ran = await wal(args);
      assert.equal(ran.code, 2, `wal ${args.join(' ')}: ${ran.stderr}`);
      assert.match(ran.stderr, message);
      assert.match(ran.stderr, /Run "payments-wal --help" for usage/);
      assert.equal(ran.stdout, '');
    }
    const none = await wal(['stat', '--data', tempDir('wal-none-')]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /data\.mdb does not exist: there is no store to read/);
  });
});
