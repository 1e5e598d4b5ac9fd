// The intake bound (docs/money.md): per environment and currency, what the service has
// taken in (ledger and account inflow, incoming payments awaiting approval) stays at most
// Number.MAX_SAFE_INTEGER, and every decision that adds to it is refused first, with 400.
// Without it, a platform that raises maxAmount could make a later step overflow inside
// `apply`, where a throw stops the process (exit 70): a refund landing on a balance filled
// meanwhile (and its timer, still pending, firing again after every restart), an approval
// crediting a balance filled meanwhile, the ledger's inflow passing 2^53. These run the real
// service with a manual clock; each scenario gets its own environment, since it uses up
// most of the USD intake.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService, type TestService } from './support/service.js';
import { assertError, assertStatus, createCustomer } from './support/assertions.js';
import { accountIn, assertLedgerHolds, balanceOf, createQuote, externalUsd, fund, getJson, quoteBody, until } from './support/money.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const MAX = Number.MAX_SAFE_INTEGER;

// A throw in apply ends this process with 70 before any assertion can fail: say so, with
// the service's own `fatal:` line, so the failure reads as what it is.
const running = new Set<TestService>();
process.once('exit', (code) => {
  if (code === 0) return;
  for (const svc of running) {
    for (const line of svc.reportLines) {
      if (line.startsWith('fatal:')) process.stderr.write(`\nFAILED: the service stopped the process (exit ${code}) on a movement it had accepted:\n${line}\n`);
    }
  }
});

async function start(clock: ManualClock, dataDir?: string): Promise<TestService> {
  const svc = await startTestService({ clock, ...(dataDir !== undefined ? { dataDir } : {}) });
  running.add(svc);
  return svc;
}

async function stop(svc: TestService, keepData = false): Promise<void> {
  running.delete(svc);
  await svc.stop({ keepData });
}

/** What a sandbox platform may do: quotes of USD up to 2^53 - 1. */
async function raiseUsdMax(svc: TestService): Promise<void> {
  const config = await getJson(svc, '/config');
  const supportedCurrencies = config.supportedCurrencies.map((c: any) => (c.currencyCode === 'USD' ? { ...c, maxAmount: MAX } : c));
  assertStatus(await svc.request('PATCH', '/config', { body: { supportedCurrencies } }), 200);
}

/** A direct pull of exactly `amount` cents from `bankId` into `accountId`, executed at once (same currency: no fees). */
function pull(svc: TestService, bankId: string, accountId: string, amount: number) {
  return svc.request('POST', '/quotes', { body: quoteBody(bankId, accountId, amount, { lockedCurrencySide: 'RECEIVING', immediatelyExecute: true }) });
}

async function pulled(svc: TestService, bankId: string, accountId: string, amount: number): Promise<void> {
  const res = await pull(svc, bankId, accountId, amount);
  assertStatus(res, 201);
  assert.equal(res.body.status, 'COMPLETED');
  assert.equal(res.body.totalSendingAmount, amount);
}

/** Refused as the bound says: 400 naming the amount, the message naming the limit. */
function assertPastBound(res: Awaited<ReturnType<TestService['request']>>, field: string): void {
  const error = assertError(res, 400, 'INVALID_INPUT', [field]);
  assert.match(error.message, new RegExp(`would pass ${MAX}, the largest amount the service can hold`));
}

/** Once the answer to a payment's approval webhook is logged (looked at after every commit). */
async function approvalAnswered(svc: TestService, txId: string): Promise<void> {
  const world = svc.service.services.world;
  const answered = (): boolean => {
    for (const env of world.envs.records.keys()) {
      for (const id of world.webhookEvents.idsIn(env)) {
        const e = world.webhookEvents.get(id)!;
        if (e.approval === true && e.transaction?.id === txId) return e.deliveryStatus !== 'PENDING';
      }
    }
    return false;
  };
  await until(svc, answered, `the answer to the approval webhook of ${txId}`);
}

function intakeOf(svc: TestService, accountId: string): number {
  const world = svc.service.services.world;
  return world.intakeOf(world.internalAccounts.get(accountId)!.envId, 'USD');
}

/** The service still takes writes (in a currency the scenario left room in). */
async function stillServing(svc: TestService): Promise<void> {
  const customer = await createCustomer(svc);
  const usdc = await accountIn(svc, customer.id, 'USDC');
  await fund(svc, usdc.id, 1);
  assert.equal(await balanceOf(svc, usdc.id), 1);
}

describe('the intake bound', () => {
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  const started: TestService[] = [];
  let receiver: Receiver | undefined;
  afterEach(async () => {
    for (const svc of started.splice(0)) if (running.has(svc)) await stop(svc);
    await receiver?.close();
    receiver = undefined;
  });

  /** A service with USD's bound raised (and webhooks sent to `webhookEndpoint`), and a customer with its USD account and a US bank account. */
  async function startWithCustomer(webhookEndpoint?: string) {
    const svc = await start(clock);
    started.push(svc);
    await raiseUsdMax(svc);
    if (webhookEndpoint !== undefined) assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint } }), 200);
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const bank = await externalUsd(svc, customer.id, '123');
    return { svc, customer, usd, bank };
  }

  it('a refund in flight: the pull that would fill its balance is refused, the refund lands, and a restart recovers', async () => {
    const { svc, customer, usd, bank } = await startWithCustomer();
    await fund(svc, usd.id, 1_000);
    // Suffix 004: the transfer-out is PROCESSING (in transit), rejected and refunded after 5 s.
    const out = await svc.request('POST', '/transfer-out', { body: { source: { accountId: usd.id }, destination: { accountId: (await externalUsd(svc, customer.id, '004')).id }, amount: 1_000 } });
    assertStatus(out, 201);
    assert.equal(out.body.status, 'PROCESSING');

    // Two pulls that would leave the balance 500 below 2^53 - 1, so the refund's 1,000 could
    // not land: the second is refused (a same-currency pull takes in the pulled total and
    // credits it: 2 x its amount), and nothing of it is made.
    const first = 4_000_000_000_000_000;
    await pulled(svc, bank.id, usd.id, first);
    assert.equal(intakeOf(svc, usd.id), 1_000 + 2 * first);
    const transactions = (await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount;
    const quotes = svc.service.services.world.quotes.count;
    assertPastBound(await pull(svc, bank.id, usd.id, MAX - 500 - first), 'lockedCurrencyAmount');
    assert.equal(await balanceOf(svc, usd.id), first);
    assert.equal((await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount, transactions);
    assert.equal(svc.service.services.world.quotes.count, quotes, 'no quote was made');
    assertLedgerHolds(svc);

    // The refund lands and the service keeps serving.
    clock.advance(5_000);
    await until(svc, () => svc.service.services.world.transactions.get(out.body.id)?.status === 'REFUNDED', 'the refund');
    assert.equal(await balanceOf(svc, usd.id), first + 1_000);
    assert.equal(intakeOf(svc, usd.id), 1_000 + 2 * first, 'a refund takes nothing in');
    assertLedgerHolds(svc);
    await stillServing(svc);

    // Up to the bound exactly: the room left is odd, so a pull fills all but one cent and
    // a funding of 1 the last; one more cent is refused.
    const room = MAX - intakeOf(svc, usd.id);
    await pulled(svc, bank.id, usd.id, Math.floor(room / 2));
    await fund(svc, usd.id, room % 2);
    assert.equal(intakeOf(svc, usd.id), MAX);
    assertPastBound(await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 1 } }), 'amount');
    const bankIn = await svc.request('POST', '/transfer-in', { body: { source: { accountId: bank.id }, destination: { accountId: usd.id }, amount: 1 } });
    assertPastBound(bankIn, 'amount');
    const balance = await balanceOf(svc, usd.id);
    assert.equal(balance, first + 1_000 + Math.floor(room / 2) + (room % 2));
    assertLedgerHolds(svc);

    // Money still leaves and moves: a payout out of the full account.
    const payout = await svc.request('POST', '/transfer-out', { body: { source: { accountId: usd.id }, destination: { accountId: bank.id } } });
    assertStatus(payout, 201);
    assert.equal(payout.body.status, 'COMPLETED');
    assert.equal(intakeOf(svc, usd.id), MAX, 'the intake only grows');
    await stillServing(svc);

    // A restart on the same data directory recovers the same state, invariants holding,
    // with the intake rebuilt from the records.
    const dataDir = svc.dataDir;
    await stop(svc, true);
    const again = await start(clock, dataDir);
    started.push(again);
    assertLedgerHolds(again);
    assert.equal(await balanceOf(again, usd.id), 0);
    assert.equal(intakeOf(again, usd.id), MAX);
    assertPastBound(await again.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 1 } }), 'amount');
    await stillServing(again);
  });

  it('an incoming payment awaiting approval holds its room: money that would fill it is refused, and the approval credits', async () => {
    receiver = await startReceiver((json) => (json.type === 'INCOMING_PAYMENT' && json.transaction.status === 'PENDING' ? 202 : 200));
    const { svc, customer, usd, bank } = await startWithCustomer(receiver.url);

    const amount = 1_000_000_000_000_000;
    const received = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: amount, customerId: customer.id },
    });
    assertStatus(received, 201);
    assert.equal(received.body.status, 'PENDING');
    assert.equal(intakeOf(svc, usd.id), amount, 'reserved from the moment it is recorded');
    // The platform answers the approval webhook 202: it will approve within 5 s.
    await approvalAnswered(svc, received.body.id);
    assert.equal((await getJson(svc, `/transactions/${received.body.id}`)).status, 'PENDING');

    const first = 4_000_000_000_000_000;
    await pulled(svc, bank.id, usd.id, first);
    // A pull that would have made the approval overflow the balance (8.1e15 + 1e15) is refused...
    assertPastBound(await pull(svc, bank.id, usd.id, 4_100_000_000_000_000), 'lockedCurrencyAmount');
    // ...and so is one that fits only if the payment's room is not counted.
    const room = MAX - amount - 2 * first;
    assert.ok(room < 2 * 5_000_000_000_000 && MAX - 2 * first >= 2 * 5_000_000_000_000);
    assertPastBound(await pull(svc, bank.id, usd.id, 5_000_000_000_000), 'lockedCurrencyAmount');
    // Another incoming payment past the room is refused before anything is recorded.
    const transactions = (await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount;
    const tooMuch = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$bob@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: room + 1, customerId: customer.id },
    });
    assertPastBound(tooMuch, 'receivingCurrencyAmount');
    assert.equal((await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount, transactions);
    assert.equal(await balanceOf(svc, usd.id), first);

    const approved = await svc.request('POST', `/transactions/${received.body.id}/approve`);
    assertStatus(approved, 200);
    assert.equal(approved.body.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), first + amount);
    assert.equal(intakeOf(svc, usd.id), amount + 2 * first, 'an approval adds nothing to the intake');
    assertLedgerHolds(svc);
    await stillServing(svc);

    // A rejected payment gives its room back.
    const second = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$bob@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: room, customerId: customer.id },
    });
    assertStatus(second, 201);
    assert.equal(intakeOf(svc, usd.id), MAX);
    await approvalAnswered(svc, second.body.id);
    assertStatus(await svc.request('POST', `/transactions/${second.body.id}/reject`), 200);
    assert.equal(intakeOf(svc, usd.id), MAX - room);
    await fund(svc, usd.id, 1);
    assertLedgerHolds(svc);
  });

  it('the ledger inflow: the pull that would take the environment past 2^53 is refused with 400', async () => {
    const { svc, customer, usd, bank } = await startWithCustomer();
    await pulled(svc, bank.id, usd.id, 4_500_000_000_000_000);
    // The ledger alone would take in 9.1e15 > 2^53 - 1 with this one.
    assertPastBound(await pull(svc, bank.id, usd.id, 4_600_000_000_000_000), 'lockedCurrencyAmount');
    // Executing a held quote is refused the same way, and the quote stays PENDING.
    const quote = await createQuote(svc, quoteBody(bank.id, usd.id, 4_600_000_000_000_000, { lockedCurrencySide: 'RECEIVING' }));
    assertPastBound(await svc.request('POST', `/quotes/${quote.id}/execute`), 'lockedCurrencyAmount');
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    assert.equal(await balanceOf(svc, usd.id), 4_500_000_000_000_000);
    const world = svc.service.services.world;
    assert.equal(world.ledger.get(world.internalAccounts.get(usd.id)!.envId, 'USD').inflow, 4_500_000_000_000_000);
    assertLedgerHolds(svc);
    await stillServing(svc);

    // A payout that settles and comes back (suffix 005, 30 s later) takes nothing in: the
    // return cancels the payout's outflow, so no timer ever needs room.
    const intake = intakeOf(svc, usd.id);
    const returned = await svc.request('POST', '/quotes', { body: quoteBody(usd.id, (await externalUsd(svc, customer.id, '005')).id, 1_000, { immediatelyExecute: true }) });
    assertStatus(returned, 201);
    assert.equal(returned.body.status, 'COMPLETED');
    clock.advance(30_000);
    await until(svc, () => world.transactions.get(returned.body.transactionId)?.status === 'REFUNDED', 'the return');
    assert.equal(await balanceOf(svc, usd.id), 4_500_000_000_000_000);
    assert.equal(intakeOf(svc, usd.id), intake);
    const account = world.internalAccounts.get(usd.id)!;
    assert.deepEqual([account.inflow, account.outflow], [4_500_000_000_000_000, 0]);
    assertLedgerHolds(svc);
  });
});
