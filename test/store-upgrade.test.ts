// A store written by the code before issue 10 (commit 5fb4518: log format version 1 with
// one entry per value, the chunked snapshot layout, webhook events with their resources
// rendered, payment steps carrying whole quotes) is opened by this code: every answer is
// what the old code gave, its pending timer still plays out, and after a restart in the new
// format nothing has changed. The fixture and its answers were made by running that commit
// (test/fixtures/store-5fb4518/expected.json holds the answers and the clock reading).
// A store written by 9386337, before customers were snapshotted in their compact form, gives
// the digest it gave there, before and after a snapshot in the new form.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../src/engine/clock.js';
import { LONG_PAYMENT_MS } from '../actors/transaction.js';
import { answersTo, startTestService, type TestService } from './support/service.js';
import { until } from './support/money.js';
import { World } from '../actors/world.js';
import { replayStore, type ReplayReport } from '../src/engine/inspect.js';
import { withStore } from '../src/engine/store-reader.js';
import { stateDigests } from '../src/engine/state-digest.js';

const FIXTURE = fileURLToPath(new URL('../../test/fixtures/store-5fb4518', import.meta.url));
/**
 * A store written at 9386337, whose `$idempotency` events and snapshot carry each keyed reply's
 * rendered bytes (made by its make-fixture.mjs, which recorded each keyed request's first answer).
 */
const KEYED_FIXTURE = fileURLToPath(new URL('../../test/fixtures/store-9386337', import.meta.url));

interface Fixture {
  now: number;
  settlesTransaction: string;
  expected: Record<string, unknown>;
}

interface CustomerPage {
  data: Array<{ isDeleted: boolean }>;
  totalCount: number;
}

/**
 * An answer with every internal account in it as issue 39 shows accounts: status ACTIVE, a
 * totalBalance equal to the balance, and an embedded wallet's privateEnabled (off).
 */
function withAccountStatus(answer: unknown): unknown {
  if (Array.isArray(answer)) return answer.map(withAccountStatus);
  if (answer === null || typeof answer !== 'object') return answer;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(answer)) out[key] = withAccountStatus(value);
  if (!('fundingPaymentInstructions' in out && 'balance' in out)) return out;
  return { ...out, status: 'ACTIVE', totalBalance: out['balance'], ...(out['type'] === 'EMBEDDED_WALLET' ? { privateEnabled: false } : {}) };
}

/** The answers with every internal account outside the webhook events (which keep their bodies) as issue 39 shows them. */
function withAccountsOf39(expected: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(expected).map(([path, answer]) => [path, path.startsWith('/webhooks/events') ? answer : withAccountStatus(answer)]));
}

/**
 * The old answers with what later issues changed in them: the webhook events list carries its
 * endpoint's state (issue 21), which an old log, with no endpoint health in it, leaves UP;
 * the customer list hides deleted customers unless asked for them (issue 16); internal
 * accounts show their status and total balance (issue 39), but in the events recorded before,
 * which keep their bodies.
 */
function withLaterChanges(expected: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, answer] of Object.entries(withAccountsOf39(expected))) {
    if (path.startsWith('/webhooks/events?')) out[path] = { ...(answer as object), endpoint: { state: 'UP', unansweredTries: 0 } };
    else if (path === '/customers?limit=100') {
      const page = answer as CustomerPage;
      const live = page.data.filter((c) => !c.isDeleted);
      out[path] = { ...page, data: live, totalCount: page.totalCount - (page.data.length - live.length) };
    } else out[path] = answer;
  }
  return out;
}

describe('a store written before the compact log format', () => {
  const fixture = JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8')) as Fixture;
  fixture.expected = withLaterChanges(fixture.expected);
  const dataDir = mkdtempSync(join(tmpdir(), 'store-upgrade-'));
  cpSync(FIXTURE, dataDir, { recursive: true });
  const clock = new ManualClock(fixture.now);
  let svc: TestService | undefined;
  after(async () => {
    await svc?.stop({ keepData: true });
    rmSync(dataDir, { recursive: true, force: true });
  });


  it('answers every read exactly as the old code did', async () => {
    svc = await startTestService({ clock, dataDir });
    assert.deepEqual(await answersTo(svc, Object.keys(fixture.expected)), fixture.expected);
    assert.deepEqual(svc.service.services.world.checkInvariants(), []);
  });

  it('plays out the payout timer the old log left pending', async () => {
    const world = svc!.service.services.world;
    assert.equal(world.transactions.get(fixture.settlesTransaction)?.status, 'PROCESSING');
    clock.advance(LONG_PAYMENT_MS);
    await until(svc!, () => world.transactions.get(fixture.settlesTransaction)?.status === 'COMPLETED');
    assert.deepEqual(world.checkInvariants(), []);
  });

  it('keeps everything through a restart in the new format', async () => {
    const before = await answersTo(svc!, Object.keys(fixture.expected));
    await svc!.service.services.engine.snapshot();
    await svc!.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    assert.deepEqual(await answersTo(svc, Object.keys(fixture.expected)), before);
    assert.deepEqual(svc.service.services.world.checkInvariants(), []);
  });
});

interface KeyedFixture {
  now: number;
  keyed: Array<{ method: string; path: string; body?: unknown; key: string; status: number; text: string }>;
}

describe('a store whose idempotency records carry the rendered reply', () => {
  const fixture = JSON.parse(readFileSync(join(KEYED_FIXTURE, 'expected.json'), 'utf8')) as KeyedFixture;
  const dataDir = mkdtempSync(join(tmpdir(), 'store-upgrade-keyed-'));
  cpSync(KEYED_FIXTURE, dataDir, { recursive: true });
  const clock = new ManualClock(fixture.now);
  let svc: TestService | undefined;
  after(async () => {
    await svc?.stop({ keepData: true });
    rmSync(dataDir, { recursive: true, force: true });
  });
  /** Each keyed request of the old store sent again answers what it answered then, byte for byte. */
  const assertReplays = async (service: TestService): Promise<void> => {
    for (const { method, path, body, key, status, text } of fixture.keyed) {
      const res = await service.request(method, path, { body, headers: { 'idempotency-key': key } });
      assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
      assert.equal(res.text, text, `${method} ${path}`);
      assert.equal(res.headers.get('idempotent-replayed'), 'true', `${method} ${path}`);
    }
  };

  it('replays each keyed request with its first bytes, from its snapshot and its log', async () => {
    svc = await startTestService({ clock, dataDir });
    assert.ok(svc.service.services.engine.snapshotSeq > 0, 'the old snapshot was loaded');
    await assertReplays(svc);
  });

  it('replays them after a restart from a snapshot of this format', async () => {
    await svc!.service.services.engine.snapshot();
    await svc!.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    await assertReplays(svc);
  });
});
const FIXTURE_9386337 = fileURLToPath(new URL('../../test/fixtures/store-9386337-customers', import.meta.url));

interface DigestFixture {
  now: number;
  snapshotSeq: number;
  lastSeq: number;
  digest: ReplayReport['digest'];
  expected: Record<string, unknown>;
}

/**
 * A digest fixture's expectations and a copy of its store to run on, removed when the suite
 * ends, after the service `running` names (if any) stops.
 */
function copiedFixture(folder: string, prefix: string, running: () => TestService | undefined): { fixture: DigestFixture; dataDir: string; clock: ManualClock } {
  const fixture = JSON.parse(readFileSync(join(folder, 'expected.json'), 'utf8')) as DigestFixture;
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  cpSync(join(folder, 'db'), dataDir, { recursive: true });
  after(async () => {
    await running()?.stop({ keepData: true });
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { fixture, dataDir, clock: new ManualClock(fixture.now) };
}

/**
 * The service on the fixture's store answers as the old code did; then it takes a snapshot
 * and stops. Returns the store's replay, which starts at that snapshot.
 */
async function answeredThenSnapshotted(fixture: DigestFixture, dataDir: string, clock: ManualClock): Promise<ReplayReport> {
  const svc = await startTestService({ clock, dataDir });
  try {
    assert.deepEqual(await answersTo(svc, Object.keys(fixture.expected)), fixture.expected);
    await svc.service.services.engine.snapshot();
  } finally {
    await svc.stop({ keepData: true });
  }
  const replayed = await replayStore(dataDir, new World());
  assert.equal(replayed.fromSnapshot, fixture.lastSeq);
  return replayed;
}

/** How many of the snapshot's customers are stored in the compact form (StoredCustomer, an array). */
function compactCustomers(dataDir: string): Promise<number> {
  return withStore(dataDir, (store) => store.snapshot()!.records.filter(([id, record]) => id.startsWith('Customer:') && Array.isArray(record)).length);
}

// A store written by 9386337, the code before customers were snapshotted in their compact
// form: its snapshot holds each customer as its whole record (of every shape: defaults, a
// profile and an address, a business, a chosen UMA address, patched, deleted), with one
// entry after it. The fixture's make-fixture.mjs recorded the digest `npm run wal -- replay`
// gave there and the answers.
describe('a store written before customers were snapshotted in their compact form', () => {
  let svc: TestService | undefined;
  const { fixture, dataDir, clock } = copiedFixture(FIXTURE_9386337, 'store-upgrade-compact-', () => svc);
  fixture.expected = withAccountsOf39(fixture.expected);

  it('replays through its snapshot to the digest the old code gave', async () => {
    const replayed = await replayStore(dataDir, new World());
    assert.equal(replayed.fromSnapshot, fixture.snapshotSeq);
    assert.equal(await compactCustomers(dataDir), 0);
    assert.deepEqual(replayed.digest, fixture.digest);
  });

  it('gives back every customer of the old store, of every shape, from its compact form', async () => {
    const world = new World();
    await replayStore(dataDir, world);
    const records = world.capture();
    const stored = records.map(([id, record]) => [id, world.storedForm(id, record)] as const);
    assert.equal(stored.filter(([id, form]) => id.startsWith('Customer:') && Array.isArray(form)).length, 7);
    const restored = new World();
    restored.restore(stored);
    assert.equal(stateDigests({ records: restored.capture(), timers: [], effects: [], idempotency: [] }).records, fixture.digest.records);
    assert.deepEqual(restored.checkInvariants(), []);
  });

  it('answers every read as the old code did, and after a snapshot in the compact form keeps the digest and the answers', async () => {
    const replayed = await answeredThenSnapshotted(fixture, dataDir, clock);
    // A full snapshot (the first over a base from before lazy chunks): every customer, the old ones and the one made since, in the compact form.
    assert.equal(await compactCustomers(dataDir), 7);
    assert.deepEqual(replayed.digest, fixture.digest);
    svc = await startTestService({ clock, dataDir });
    assert.deepEqual(await answersTo(svc, Object.keys(fixture.expected)), fixture.expected);
    assert.deepEqual(svc.service.services.world.checkInvariants(), []);
  });
});

const FIXTURE_1BCECE4 = fileURLToPath(new URL('../../test/fixtures/store-1bcece4-payments', import.meta.url));

// A store written by 1bcece4, the code before an immediate payment's webhook step was its
// quote's: its snapshot holds each payment's step as a record (its transactions named by
// whole id, one reporting the version a confirmed receipt replaced), quotes stored with their
// source's customer and transaction id, and two payments after it (one executed as it was
// made, one later). The fixture's make-fixture.mjs recorded the digest `npm run wal -- replay`
// gave there and the answers.
describe('a store written before immediate payments derived their webhook steps', () => {
  let svc: TestService | undefined;
  const { fixture, dataDir, clock } = copiedFixture(FIXTURE_1BCECE4, 'store-upgrade-steps-', () => svc);

  it('replays through its snapshot to the digest the old code gave, whichever form its steps take', async () => {
    const world = new World();
    const replayed = await replayStore(dataDir, world);
    assert.equal(replayed.fromSnapshot, fixture.snapshotSeq);
    assert.deepEqual(replayed.digest, fixture.digest);
    // The payment made as its quote was after the snapshot: its step is its quote's now.
    const derived = [...world.quotes.records.values()].filter((quote) => quote.webhookStep !== undefined);
    assert.equal(derived.length, 1);
    assert.equal(world.webhookEvents.records.has(`Webhook:${derived[0]!.id.slice('Quote:'.length, -2)}`), false);
  });

  it('answers every read as the old code did, and after a snapshot in the new forms keeps the digest and the answers', async () => {
    const replayed = await answeredThenSnapshotted(fixture, dataDir, clock);
    assert.deepEqual(replayed.digest, fixture.digest);
    svc = await startTestService({ clock, dataDir });
    assert.deepEqual(await answersTo(svc, Object.keys(fixture.expected)), fixture.expected);
    assert.deepEqual(svc.service.services.world.checkInvariants(), []);
  });
});
