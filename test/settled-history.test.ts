// Settled history leaves memory (actors/registry.ts, RecordKind.settled): once a snapshot
// holds a completed payment's quote and transactions in lazy chunks, the service drops them
// from its maps and reads them back on first use. An integrator sees nothing of it: every
// read answers as before, across restarts, after a full snapshot that copies the chunks
// without reading them back, and after a change to a record that had left memory.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SnapshotStore } from '../src/engine/snapshot.js';
import type { RecordMap } from '../actors/registry.js';
import type { LazyChunk } from '../src/engine/state-machine.js';
import { openLmdbStorage } from '../src/engine/storage.js';
import { startTestService, type TestService } from './support/service.js';
import { assertStatus } from './support/assertions.js';
import { balanceOf, createQuote, fundedCustomer, getJson, quoteBody } from './support/money.js';

interface Made {
  /** Quotes executed and completed, with their transactions. */
  paid: Array<{ quoteId: string; transactionId: string }>;
  /** A quote left PENDING (not executed): live, it stays in memory. */
  pendingQuoteId: string;
  /** The payer, whose transactions are listed. */
  customerId: string;
}

async function pay(svc: TestService, payments: number): Promise<Made> {
  const alice = await fundedCustomer(svc, 1_000_000);
  const bob = await fundedCustomer(svc, 0);
  const paid: Made['paid'] = [];
  for (let i = 0; i < payments; i++) {
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100 + i, { immediatelyExecute: true }));
    paid.push({ quoteId: quote.id, transactionId: quote.transactionId });
  }
  const pending = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 7));
  return { paid, pendingQuoteId: pending.id, customerId: alice.customer.id };
}

/** What an integrator reads of the payments: each quote and transaction, and the payer's transactions listed page by page. */
async function answers(svc: TestService, made: Made): Promise<unknown> {
  const reads: unknown[] = [];
  for (const { quoteId, transactionId } of made.paid) reads.push(await getJson(svc, `/quotes/${quoteId}`), await getJson(svc, `/transactions/${transactionId}`));
  reads.push(await getJson(svc, `/quotes/${made.pendingQuoteId}`));
  const listed: unknown[] = [];
  let cursor: string | undefined;
  do {
    const page = await getJson(svc, `/transactions?customerId=${made.customerId}&limit=7${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    listed.push(...page.data);
    cursor = page.hasMore === true ? page.nextCursor : undefined;
  } while (cursor !== undefined);
  return { reads, listed };
}

/** Which of the payments' records the service holds in memory now. */
function inMemory(svc: TestService, made: Made): { quotes: number; transactions: number; pending: boolean } {
  const world = svc.service.services.world;
  const holds = (map: ReadonlyMap<string, unknown>, id: string): boolean => Map.prototype.has.call(map, id);
  return {
    quotes: made.paid.filter(({ quoteId }) => holds(world.quotes.records, quoteId)).length,
    transactions: made.paid.filter(({ transactionId }) => holds(world.transactions.records, transactionId)).length,
    pending: holds(world.quotes.records, made.pendingQuoteId),
  };
}

const NONE_HELD = { quotes: 0, transactions: 0, pending: true };

describe('settled history out of memory', () => {
  it('drops a completed payment once a snapshot holds it, and answers every read as before, also after restarts', async () => {
    const first = await startTestService();
    let made: Made;
    let before: unknown;
    try {
      made = await pay(first, 12);
      before = await answers(first, made);
      assert.equal(inMemory(first, made).quotes, 12, 'before any snapshot every quote is in memory');
      await first.service.services.engine.snapshot();
      assert.deepEqual(inMemory(first, made), NONE_HELD, 'settled records leave memory; the pending quote stays');
      assert.deepEqual(await answers(first, made), before);
      // Read back for those reads, they leave again with the next snapshot.
      await createQuote(first, quoteBody((await fundedCustomer(first, 10)).usd.id, (await fundedCustomer(first, 0)).usd.id, 1, { immediatelyExecute: true }));
      await first.service.services.engine.snapshot();
      assert.deepEqual(inMemory(first, made), NONE_HELD);
    } finally {
      await first.stop({ keepData: true });
    }
    const second = await startTestService({ dataDir: first.dataDir });
    try {
      assert.deepEqual(inMemory(second, made), NONE_HELD, 'recovery reads them for their index entries and drops them again');
      assert.deepEqual(await answers(second, made), before);
      assert.deepEqual(second.service.services.world.checkInvariants(), []);
    } finally {
      await second.stop();
    }
  });

  it('reads back what left memory after a read came between the snapshot taking over and the drop', async () => {
    const svc = await startTestService();
    try {
      // A snapshot has put settled records in lazy chunks before: the next one's are read on demand.
      await pay(svc, 2);
      await svc.service.services.engine.snapshot();
      const made = await pay(svc, 5);
      const before = await answers(svc, made);
      const world = svc.service.services.world;
      // The store holds the new snapshot a few turns before the machine drops what it put there:
      // a read in between (here of every chunk, as a walk of all the records reads them) finds
      // their records still in memory and reads nothing of them, then they leave.
      const lazyWritten = world.lazyWritten.bind(world);
      world.lazyWritten = (lazy, written) => {
        for (const records of [world.quotes.records, world.transactions.records]) (records as RecordMap<unknown>).loadAll();
        lazyWritten(lazy, written);
      };
      await svc.service.services.engine.snapshot();
      assert.deepEqual(inMemory(svc, made), NONE_HELD);
      assert.deepEqual(await answers(svc, made), before);
    } finally {
      await svc.stop();
    }
  });

  it('reads a record back whole inside a decision that holds its actor alone, whoever owns the rest of its chunk', async () => {
    const svc = await startTestService();
    try {
      const alice = await fundedCustomer(svc, 1_000);
      const bob = await fundedCustomer(svc, 0);
      const carol = await fundedCustomer(svc, 1_000);
      const dave = await fundedCustomer(svc, 0);
      const first = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }));
      const second = await createQuote(svc, quoteBody(carol.usd.id, dave.usd.id, 200, { immediatelyExecute: true }));
      const before = [await getJson(svc, `/transactions/${first.transactionId}`), await getJson(svc, `/transactions/${second.transactionId}`)];
      const { engine, world } = svc.service.services;
      await engine.snapshot();
      assert.equal(Map.prototype.has.call(world.transactions.records, second.transactionId), false, 'the payment left memory');
      // As a timer keyed by the transaction decides: holding carol's account alone, it reads
      // the chunk that also holds alice's payment, whose quotes alice's account owns.
      const read = await engine.exec([carol.usd.id], () => {
        const tx = world.transactions.get(second.transactionId);
        return { events: [], reply: () => tx?.id };
      });
      assert.equal(read, second.transactionId);
      assert.deepEqual([await getJson(svc, `/transactions/${first.transactionId}`), await getJson(svc, `/transactions/${second.transactionId}`)], before);
    } finally {
      await svc.stop();
    }
  });

  it('answers an idempotent retry of a payment that left memory with the first reply, byte for byte, also after a restart', async () => {
    const first = await startTestService();
    let body: Record<string, unknown>;
    let reply: string;
    let payer: string;
    let balance: number;
    const headers = { 'idempotency-key': 'settled-history-retry' };
    try {
      const alice = await fundedCustomer(first, 1_000);
      const bob = await fundedCustomer(first, 0);
      payer = alice.usd.id;
      body = quoteBody(payer, bob.usd.id, 250, { immediatelyExecute: true });
      const res = await first.request('POST', '/quotes', { body, headers });
      assertStatus(res, 201);
      reply = res.text;
      balance = await balanceOf(first, payer);
      await first.service.services.engine.snapshot();
      const id = (res.body as { id: string }).id;
      assert.equal(Map.prototype.has.call(first.service.services.world.quotes.records, id), false, 'the quote left memory');
      const again = await first.request('POST', '/quotes', { body, headers });
      assert.equal(again.status, 201);
      assert.equal(again.text, reply);
      // The snapshot after it stores the reply whole: its record is not in memory to name.
      await first.service.services.engine.snapshot();
    } finally {
      await first.stop({ keepData: true });
    }
    const second = await startTestService({ dataDir: first.dataDir });
    try {
      const again = await second.request('POST', '/quotes', { body, headers });
      assert.equal(again.status, 201);
      assert.equal(again.text, reply);
      assert.equal(await balanceOf(second, payer), balance, 'paid once');
    } finally {
      await second.stop();
    }
  });

  it('keeps a change to a record that had left memory, through a snapshot and a restart', async () => {
    const first = await startTestService();
    let made: Made;
    let confirmed: unknown;
    let before: unknown;
    try {
      made = await pay(first, 3);
      await first.service.services.engine.snapshot();
      const { transactionId } = made.paid[1]!;
      assert.equal(inMemory(first, made).transactions, 0);
      const answer = await first.request('POST', `/transactions/${transactionId}/confirm`, { body: { receiptDeliveryConfirmedAt: '2026-01-02T03:04:05.000Z' } });
      assertStatus(answer, 200);
      confirmed = await getJson(first, `/transactions/${transactionId}`);
      assert.equal((confirmed as { receiptDeliveryConfirmedAt?: string }).receiptDeliveryConfirmedAt, '2026-01-02T03:04:05.000Z');
      await first.service.services.engine.snapshot();
      before = await answers(first, made);
    } finally {
      await first.stop({ keepData: true });
    }
    const second = await startTestService({ dataDir: first.dataDir });
    try {
      // The first payment's read comes first: its chunk also holds the older version of the changed one.
      assert.deepEqual(await answers(second, made), before);
      assert.deepEqual(await getJson(second, `/transactions/${made.paid[1]!.transactionId}`), confirmed);
    } finally {
      await second.stop();
    }
  });

  it('copies what left memory into a full snapshot without reading it back, and restarts from that snapshot alone', async () => {
    const first = await startTestService({ snapshotEverySeconds: 1e9 });
    let made: Made;
    let before: unknown;
    try {
      made = await pay(first, 10);
      await first.service.services.engine.snapshot();
      before = await answers(first, made);
      // Increments outgrow their base (snapshot.ts, COMPACT_AFTER): one of the snapshots after it is full.
      const fulls = (): number => first.reportLines.filter((line) => line.startsWith('snapshot at') && line.includes('(full):')).length;
      for (let round = 0; round < 16 && fulls() < 2; round++) {
        await pay(first, 40);
        await first.service.services.engine.snapshot();
      }
      assert.equal(fulls(), 2, 'a second full snapshot was written');
      assert.deepEqual(inMemory(first, made), NONE_HELD, 'the full snapshot did not read back what had left memory');
      assert.deepEqual(await answers(first, made), before);
    } finally {
      await first.stop({ keepData: true });
    }
    const second = await startTestService({ dataDir: first.dataDir });
    try {
      assert.deepEqual(await answers(second, made), before);
      assert.deepEqual(second.service.services.world.checkInvariants(), []);
    } finally {
      await second.stop();
    }
  });
});

describe("a full snapshot's copy of the chunks the machine names", () => {
  it('copies each record once, its newest version, and none that memory holds', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'carried-'));
    const storage = openLmdbStorage(dataDir);
    try {
      // Newest generation first, as the machine names them: A's newest version is in generation 3, B is in memory.
      const chunk = (generation: number, ids: string[], version: number): LazyChunk => ({
        generation,
        kind: 'Thing:',
        loaded: false,
        read: () => [ids, ids.map((id) => ({ id, version }))],
      });
      const stats = await new SnapshotStore(storage, () => 0).write({
        seq: 1,
        at: 0,
        full: true,
        records: { ids: ['Thing:B'], records: [{ id: 'Thing:B', version: 9 }], carried: [chunk(3, ['Thing:A', 'Thing:B'], 3), chunk(2, ['Thing:A', 'Thing:C'], 2)] },
        timers: [],
        effects: [],
        idempotency: [],
        counts: { timers: 0, effects: 0, idempotency: 0 },
        lazyKeys: () => ({ kind: 'Thing:', drop: false }),
        lazyKinds: ['Thing:'],
      });
      assert.equal(stats.written, 3, 'B from memory, then A and C once each');
      const image = new SnapshotStore(storage, () => 0).load()!;
      assert.deepEqual(
        [...image.records].sort((a, b) => a[0].localeCompare(b[0])),
        [
          ['Thing:A', { id: 'Thing:A', version: 3 }],
          ['Thing:B', { id: 'Thing:B', version: 9 }],
          ['Thing:C', { id: 'Thing:C', version: 2 }],
        ],
      );
    } finally {
      await storage.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
