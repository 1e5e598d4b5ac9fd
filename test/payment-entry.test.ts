// The log holds decided facts: a quote-and-execute between two internal accounts is one
// entry of about 260 bytes, the quote's `quote.decided` (its ids, amounts and price, no
// record) and the execution's `payment.decided` (the quote; the transaction id only when it
// is not the quote's own UUID), ids as their UUIDs' bytes; the quote's record, its transactions, postings and webhook events
// are derived when it applies. What a platform reads back (the events' environment, type
// and timestamp) is what it read when they were logged in full.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { decodeGroup } from '../src/engine/log.js';
import { idOf, loggedId, newId } from '../src/engine/ids.js';
import { ManualClock } from '../src/engine/clock.js';
import { SHORT_OUTCOME_MS } from '../actors/transaction.js';
import { answersTo, startTestService, type TestService } from './support/service.js';
import { assertStatus } from './support/assertions.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';
import { createQuote, execute, externalUsd, fund, fundedCustomer, getJson, quoteBody, until } from './support/money.js';

/** What a quote-and-execute between internal accounts may take in the log. */
const PAYMENT_ENTRY_LIMIT = 400;

/**
 * What an Idempotency-Key adds to a payment's entry (bytes): its record names the quote the
 * reply rendered instead of carrying the rendered quote (1,269 bytes added with the rendered
 * quote, 269 with its name: the scoped key is 115 of them, the request's hash 64).
 */
const KEYED_PAYMENT_EXTRA = 300;

/**
 * What each other payment step's entry may take in the log (bytes; measured at the commit
 * that made each log its decided facts, with some room: ids as bytes, no records).
 */
const STEP_ENTRY_LIMITS: Record<string, number> = {
  'a quote to execute later': 400,
  'transfer-in': 200,
  'transfer-out': 200,
  'transfer-out, held by the bank': 450,
  'its refund': 200,
  'a payout\'s refund': 200,
  'sandbox funding': 150,
  'money for a REALTIME_FUNDING quote': 200,
  'an incoming UMA payment, approved at once': 300,
  'an incoming UMA payment\'s approval': 240,
};

/** The bytes of each log group, by the sequence number it starts at. */
async function groupBytes(dataDir: string): Promise<Map<number, { bytes: number; entries: number; payment: boolean }>> {
  const root = open({ path: dataDir });
  const groups = new Map<number, { bytes: number; entries: number; payment: boolean }>();
  try {
    const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
    for (const { key, value } of log.getRange()) {
      const entries = decodeGroup<{ type: string }>(key, value);
      const payment = entries.some((entry) => entry.events.some((e) => e.type === 'quote.decided'));
      groups.set(key, { bytes: value.length, entries: entries.length, payment });
    }
  } finally {
    await root.close();
  }
  return groups;
}

describe('the payment entry', () => {
  it(`is under ${PAYMENT_ENTRY_LIMIT} bytes, and its webhook events read back with the payment's environment and time`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'payment-entry-'));
    let svc = await startTestService({ dataDir });
    let quote: { id: string; transactionId: string; createdAt: string };
    try {
      const payer = await fundedCustomer(svc, 1_000_000);
      const payee = await fundedCustomer(svc, 0);
      quote = await createQuote(svc, quoteBody(payer.usd.id, payee.usd.id, 1_000, { immediatelyExecute: true }));
    } finally {
      await svc.stop({ keepData: true });
    }
    const root = open({ path: dataDir });
    const paymentBytes: number[] = [];
    const executions: Array<{ type: string; transactionId?: unknown }> = [];
    try {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      for (const { key, value } of log.getRange()) {
        const group = decodeGroup<{ type: string; transactionId?: unknown }>(key, value);
        if (group.length === 1 && group[0]!.events.some((e) => e.type === 'quote.decided')) paymentBytes.push(value.length);
        for (const entry of group) executions.push(...entry.events.filter((e) => e.type === 'payment.decided'));
      }
    } finally {
      await root.close();
    }
    // After a restart the events come from the log alone.
    svc = await startTestService({ dataDir });
    try {
      assert.equal(paymentBytes.length, 1, `payment entries: ${paymentBytes.join(', ')}`);
      assert.ok(paymentBytes[0]! < PAYMENT_ENTRY_LIMIT, `the payment entry is ${paymentBytes[0]} bytes`);
      // Executed as it was made, the payment's transaction has the quote's UUID, which goes without saying.
      assert.deepEqual(executions.map((e) => e.transactionId), [undefined]);
      // The quote's record, derived again from its facts on replay, reads as its first reply did.
      assert.deepEqual(await getJson(svc, `/quotes/${quote.id}`), quote);
      const events = (await getJson(svc, '/webhooks/events?limit=100')) as { data: Array<{ type: string; timestamp: string; transaction?: { id: string } }> };
      // Listed in the payment's environment, at the payment's time.
      const outgoing = events.data.find((e) => e.type === 'OUTGOING_PAYMENT' && e.transaction?.id === quote.transactionId);
      assert.equal(outgoing?.timestamp, quote.createdAt);
      assert.ok(events.data.some((e) => e.type === 'INCOMING_PAYMENT' && e.timestamp === quote.createdAt));
      assert.ok(events.data.filter((e) => e.type === 'ACCOUNT_STATUS' && e.timestamp === quote.createdAt).length >= 2, 'both balances changed');
    } finally {
      await svc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it(`with an Idempotency-Key adds at most ${KEYED_PAYMENT_EXTRA} bytes: the key, the request's hash, the status and the quote it answers with, not the reply`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'payment-entry-keyed-'));
    const svc = await startTestService({ dataDir });
    try {
      const payer = await fundedCustomer(svc, 1_000_000);
      const payee = await fundedCustomer(svc, 0);
      const body = quoteBody(payer.usd.id, payee.usd.id, 1_000, { immediatelyExecute: true });
      await createQuote(svc, body);
      await createQuote(svc, body, { 'idempotency-key': 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' });
    } finally {
      await svc.stop({ keepData: true });
    }
    const payments = [...(await groupBytes(dataDir)).values()].filter((group) => group.payment);
    rmSync(dataDir, { recursive: true, force: true });
    assert.equal(payments.length, 2, JSON.stringify(payments));
    assert.ok(payments.every((group) => group.entries === 1), JSON.stringify(payments));
    const [bare, keyed] = [payments[0]!.bytes, payments[1]!.bytes];
    assert.ok(keyed - bare <= KEYED_PAYMENT_EXTRA, `a bare payment's entry is ${bare} bytes, a keyed one's ${keyed}`);
  });

  it('carries an id of its field\'s kind as 16 bytes and gives it back exactly; any other id as its string', () => {
    const quoteId = newId('Quote', 1_795_798_453_485);
    const logged = loggedId(quoteId, 'Quote');
    assert.ok(logged instanceof Uint8Array && logged.length === 16, `logged as ${String(logged)}`);
    assert.equal(idOf(logged, 'Quote'), quoteId);
    // Bytes would give these back changed (lowercased, another kind, without the suffix): they travel as they are.
    const hyphen = quoteId.indexOf('-');
    const hyphenMoved = `${quoteId.slice(0, hyphen)}${quoteId[hyphen + 1]}-${quoteId.slice(hyphen + 2)}`;
    const notHex = `${quoteId.slice(0, -1)}g`;
    for (const id of [quoteId.toUpperCase().replace('QUOTE:', 'Quote:'), quoteId.replace('Quote:', 'Transaction:'), `${quoteId}#sandbox`, 'Quote:legacy-1', '', hyphenMoved, notHex]) {
      assert.equal(loggedId(id, 'Quote'), id);
      assert.equal(idOf(loggedId(id, 'Quote'), 'Quote'), id);
    }
    // The bytes of an id just logged read back under another field's kind name that kind, as bytes read from the log do.
    const bytes = loggedId(quoteId, 'Quote');
    assert.equal(loggedId(quoteId, 'Quote'), bytes, 'an id logged twice in a row is the same bytes');
    assert.equal(loggedId(quoteId, 'Transaction'), quoteId, 'in a field of another kind it stays text');
    assert.equal(idOf(bytes, 'Transaction'), quoteId.replace('Quote:', 'Transaction:'));
    assert.equal(idOf(Uint8Array.from(bytes as Uint8Array), 'Quote'), quoteId);
    assert.equal(loggedId(quoteId.replace('Quote:', 'Transaction:'), 'Quote'), quoteId.replace('Quote:', 'Transaction:'));
  });

  it('of every other payment step holds its decided facts only, and replays to the answers the service gave', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'payment-steps-'));
    const clock = new ManualClock(Date.UTC(2026, 6, 1));
    let svc: TestService = await startTestService({ clock, dataDir });
    const steps = new Map<string, number>();
    /** Runs a step and notes the one entry it logged. */
    const step = async (name: string, run: () => Promise<void>): Promise<void> => {
      const before = svc.service.services.engine.lastSeq;
      await run();
      await until(svc, () => svc.service.services.engine.lastSeq > before, `${name}'s entry`);
      assert.equal(svc.service.services.engine.lastSeq, before + 1, `${name} logs one entry`);
      steps.set(name, before + 1);
    };
    const reads = ['/transactions?limit=100', '/webhooks/events?limit=100', '/internal-accounts?limit=100'];
    const world = () => svc.service.services.world;
    let receiver: Receiver | undefined;
    let live: Record<string, unknown> = {};
    try {
      const { customer, usd } = await fundedCustomer(svc, 0);
      const bank = await externalUsd(svc, customer.id, '123');
      const holding = await externalUsd(svc, customer.id, '004');
      const transfer = (path: string, body: Record<string, unknown>) => async () => assertStatus(await svc.request('POST', path, { body }), 201);
      await step('transfer-in', transfer('/transfer-in', { source: { accountId: bank.id }, destination: { accountId: usd.id }, amount: 50_000 }));
      await step('transfer-out', transfer('/transfer-out', { source: { accountId: usd.id }, destination: { accountId: bank.id }, amount: 1_000 }));
      await step('transfer-out, held by the bank', transfer('/transfer-out', { source: { accountId: usd.id }, destination: { accountId: holding.id }, amount: 2_000 }));
      await step('its refund', async () => clock.advance(SHORT_OUTCOME_MS + 1));
      let later: { id: string } | undefined;
      await step('a quote to execute later', async () => {
        later = await createQuote(svc, quoteBody(usd.id, holding.id, 700));
      });
      const payout = await execute(svc, later!.id);
      await step('a payout\'s refund', async () => clock.advance(SHORT_OUTCOME_MS + 1));
      await until(svc, () => svc.service.services.world.transactions.get(payout.transactionId)?.status === 'REFUNDED');
      await step('sandbox funding', async () => fund(svc, usd.id, 3_000));
      const funding = await createQuote(svc, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: customer.id }, destination: { destinationType: 'ACCOUNT', accountId: usd.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_500 });
      await step('money for a REALTIME_FUNDING quote', async () => assertStatus(await svc.request('POST', '/sandbox/send', { body: { quoteId: funding.id, currencyCode: 'USD' } }), 200));
      const incoming = { senderUmaAddress: '$alice@sandbox.uma.test', customerId: customer.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 500 };
      await step('an incoming UMA payment, approved at once', async () => assertStatus(await svc.request('POST', '/sandbox/uma/receive', { body: incoming }), 201));
      // Asked for its approval (202: later), then approved; every event delivered before and after, so no delivery's entry falls into the step.
      const pendingIds = () => [...world().envs.records.keys()].reduce((n, env) => n + world().webhookEvents.pendingIn(env), 0);
      receiver = await startReceiver((json: { transaction?: { status: string } }) => (json.transaction?.status === 'PENDING' ? 202 : 200));
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
      const pending = await svc.request<{ id: string }>('POST', '/sandbox/uma/receive', { body: incoming });
      assertStatus(pending, 201);
      await until(svc, () => pendingIds() === 0, 'every event delivered');
      await step('an incoming UMA payment\'s approval', async () => assertStatus(await svc.request('POST', `/transactions/${pending.body.id}/approve`), 200));
      await until(svc, () => pendingIds() === 0, 'the approval\'s events delivered');
      live = await answersTo(svc, reads);
    } finally {
      await svc.stop({ keepData: true });
      await receiver?.close();
    }
    const groups = await groupBytes(dataDir);
    svc = await startTestService({ clock, dataDir });
    try {
      assert.deepEqual(await answersTo(svc, reads), live, 'replayed from the log alone');
      const sizes = Object.fromEntries([...steps].map(([name, seq]) => [name, groups.get(seq)]));
      for (const [name, limit] of Object.entries(STEP_ENTRY_LIMITS)) {
        assert.equal(sizes[name]?.entries, 1, `${name}: its entry is a group of its own (${JSON.stringify(sizes)})`);
        assert.ok(sizes[name]!.bytes < limit, `${name}: ${sizes[name]!.bytes} bytes (${JSON.stringify(sizes)})`);
      }
    } finally {
      await svc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
