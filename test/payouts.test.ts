// Quotes to external accounts: the sandbox outcome table of CONTRACT.md "Money", played by
// durable timers on a manual clock, with statuses, webhook events in order, balances and
// the ledger (in transit, fees) at every step; and a restart with timers pending.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { payoutPlan } from '../actors/transaction.js';
import { serviceForSuite, startTestService } from './support/service.js';
import { assertStatus, clabeEndingWith, setCurrencies } from './support/assertions.js';
import { assertLedgerHolds, balanceOf, createQuote, execute, externalUsd, fund, fundedCustomer, getJson, quoteBody, until, webhooksOf } from './support/money.js';
import { quiesce } from './support/quiesce.js';

const FUNDS = 100_000;
const AMOUNT = 10_000;

describe('payouts to external accounts (sandbox outcomes)', () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  let envId: string;
  const svc = serviceForSuite({ clock });
  before(async () => {
    envId = `${svc.credentials.platformId}#sandbox`;
    await setCurrencies(svc, ['USD', 'USDC', 'USDB', 'MXN']);
  });

  const ledger = (currency = 'USD') => svc.service.services.world.ledger.get(envId, currency);
  const txStatus = (id: string) => svc.service.services.world.transactions.get(id)?.status;

  /** A funded sender, an external account ending in `suffix`, and the executed quote. */
  async function payout(suffix: string): Promise<{ usd: any; quote: any; tx: any }> {
    const { customer, usd } = await fundedCustomer(svc, FUNDS);
    const external = await externalUsd(svc, customer.id, suffix);
    const quote = await execute(svc, (await createQuote(svc, quoteBody(usd.id, external.id, AMOUNT, { destination: { destinationType: 'ACCOUNT', accountId: external.id, paymentRail: 'ACH' } }))).id);
    const tx = await getJson(svc, `/transactions/${quote.transactionId}`);
    assert.deepEqual(tx.destination, { destinationType: 'ACCOUNT', accountId: external.id, currency: 'USD', paymentRail: 'ACH' });
    return { usd, quote, tx };
  }

  /**
   * Asserts that a payout first `was` and then failed is refunded: its quote FAILED, the
   * sender's FUNDS back, the webhooks `was`, FAILED, REFUNDED in order, the ledger holding.
   */
  async function assertRefunded({ usd, quote, tx }: { usd: any; quote: any; tx: any }, was: 'PROCESSING' | 'COMPLETED'): Promise<void> {
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'FAILED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.deepEqual(webhooksOf(svc, tx.id), [
      ['OUTGOING_PAYMENT', was],
      ['OUTGOING_PAYMENT', 'FAILED'],
      ['OUTGOING_PAYMENT', 'REFUNDED'],
    ]);
    assertLedgerHolds(svc);
  }

  /** The customer's MXN CLABE external account ending in `suffix` (its sandbox outcome); its id. */
  async function clabeAccount(customerId: string, suffix: string): Promise<string> {
    const res = await svc.request('POST', '/customers/external-accounts', {
      body: { customerId, currency: 'MXN', accountInfo: { accountType: 'CLABE', clabe: clabeEndingWith(suffix), beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Lopez' } } },
    });
    assertStatus(res, 201);
    return res.body.id;
  }

  it('any other suffix: COMPLETED at once, settled out of the service', async () => {
    const before = ledger();
    const { usd, quote, tx } = await payout('123');
    assert.equal(quote.status, 'COMPLETED');
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(typeof tx.settledAt, 'string');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(ledger().inTransit, before.inTransit);
    assert.deepEqual(webhooksOf(svc, tx.id), [['OUTGOING_PAYMENT', 'COMPLETED']]);
    assertLedgerHolds(svc);
  });

  it('002: FAILED with QUOTE_EXECUTION_FAILED at execute; nothing moves, the quote is FAILED', async () => {
    const { usd, quote, tx } = await payout('002');
    assert.equal(quote.status, 'FAILED');
    assert.equal(tx.status, 'FAILED');
    assert.equal(tx.failureReason, 'QUOTE_EXECUTION_FAILED');
    assert.equal(tx.settledAt, undefined);
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.deepEqual(webhooksOf(svc, tx.id), [['OUTGOING_PAYMENT', 'FAILED']]);
    assertLedgerHolds(svc);
  });

  it('003: PROCESSING for 6 minutes (in transit), then COMPLETED', async () => {
    const before = ledger();
    const { usd, quote, tx } = await payout('003');
    assert.equal(quote.status, 'PROCESSING');
    assert.equal(tx.status, 'PROCESSING');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(ledger().inTransit, before.inTransit + AMOUNT);
    assertLedgerHolds(svc);
    clock.advance(6 * 60_000 - 1);
    await quiesce(svc.service.services.engine);
    assert.equal((await getJson(svc, `/transactions/${tx.id}`)).status, 'PROCESSING');
    clock.advance(1);
    await until(svc, () => txStatus(tx.id) === 'COMPLETED');
    const done = await getJson(svc, `/transactions/${tx.id}`);
    assert.equal(done.settledAt, new Date(clock.now()).toISOString());
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(ledger().inTransit, before.inTransit);
    assert.deepEqual(webhooksOf(svc, tx.id), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'COMPLETED'],
    ]);
    assertLedgerHolds(svc);
  });

  it('004: PROCESSING ~5 s, then FAILED with OFFRAMP_FAILED, then REFUNDED to the source', async () => {
    const { usd, quote, tx } = await payout('004');
    assert.equal(tx.status, 'PROCESSING');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    clock.advance(5_000);
    await until(svc, () => txStatus(tx.id) === 'REFUNDED');
    const refunded = await getJson(svc, `/transactions/${tx.id}`);
    assert.equal(refunded.failureReason, 'OFFRAMP_FAILED');
    await assertRefunded({ usd, quote, tx }, 'PROCESSING');
  });

  it('005: COMPLETED, then ~30 s later FAILED (returned by the bank), then REFUNDED', async () => {
    const { usd, quote, tx } = await payout('005');
    assert.equal(quote.status, 'COMPLETED');
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    clock.advance(29_999);
    await quiesce(svc.service.services.engine);
    assert.equal((await getJson(svc, `/transactions/${tx.id}`)).status, 'COMPLETED');
    clock.advance(1);
    await until(svc, () => txStatus(tx.id) === 'REFUNDED');
    assert.equal((await getJson(svc, `/transactions/${tx.id}`)).failureReason, 'OFFRAMP_FAILED');
    await assertRefunded({ usd, quote, tx }, 'COMPLETED');
  });

  it('006: PROCESSING ~5 s, then FAILED (cancelled by the user, no failure reason), then REFUNDED', async () => {
    const { usd, quote, tx } = await payout('006');
    assert.equal(tx.status, 'PROCESSING');
    clock.advance(5_000);
    await until(svc, () => txStatus(tx.id) === 'REFUNDED');
    const refunded = await getJson(svc, `/transactions/${tx.id}`);
    // The spec's list of reasons has none for a cancellation (docs/payments.md): the field is absent.
    assert.equal('failureReason' in refunded, false, `failureReason ${refunded.failureReason}`);
    await assertRefunded({ usd, quote, tx }, 'PROCESSING');
  });

  it('007: PROCESSING ~5 s, then FAILED with OFFRAMP_FAILED; the money is lost (outflow), not refunded', async () => {
    const before = ledger();
    const { usd, quote, tx } = await payout('007');
    clock.advance(5_000);
    await until(svc, () => txStatus(tx.id) === 'FAILED');
    const failed = await getJson(svc, `/transactions/${tx.id}`);
    assert.equal(failed.failureReason, 'OFFRAMP_FAILED');
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'FAILED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(ledger().inTransit, before.inTransit);
    assert.deepEqual(webhooksOf(svc, tx.id), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'FAILED'],
    ]);
    assertLedgerHolds(svc);
  });

  it('a converted payout (USD to an MXN CLABE) that fails refunds the fees too', async () => {
    const { customer, usd } = await fundedCustomer(svc, FUNDS);
    const clabe = await clabeAccount(customer.id, '004');
    // The suite's other payouts add to the same ledger: this payout's share is the difference.
    const before = ledger();
    const quote = await createQuote(svc, quoteBody(usd.id, clabe, AMOUNT));
    assert.equal(quote.receivingCurrency.code, 'MXN');
    assert.ok(quote.feesIncluded > 0);
    assert.deepEqual(quote.counterpartyInformation, { FULL_NAME: 'Maria Lopez' });
    const executed = await execute(svc, quote.id);
    assert.equal(executed.status, 'PROCESSING');
    // The principal (what is sent less the fees) is in transit, the fees taken.
    assert.equal(quote.totalSendingAmount, AMOUNT);
    assert.deepEqual(
      { fees: ledger().fees - before.fees, inTransit: ledger().inTransit - before.inTransit },
      { fees: quote.feesIncluded, inTransit: AMOUNT - quote.feesIncluded },
    );
    assertLedgerHolds(svc);
    clock.advance(5_000);
    await until(svc, () => txStatus(executed.transactionId) === 'REFUNDED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.deepEqual({ fees: ledger().fees, inTransit: ledger().inTransit }, { fees: before.fees, inTransit: before.inTransit }, 'refunded: the fees too, nothing left in transit');
    assertLedgerHolds(svc);
  });

  it('a converted payout (USD to an MXN CLABE) that the bank returns (005) refunds the fees too', async () => {
    const { customer, usd } = await fundedCustomer(svc, FUNDS);
    const clabe = await clabeAccount(customer.id, '005');
    // The suite's other payouts add to the same ledger: this payout's share is the difference.
    const before = ledger();
    const quote = await createQuote(svc, quoteBody(usd.id, clabe, AMOUNT));
    assert.ok(quote.feesIncluded > 0);
    const executed = await execute(svc, quote.id);
    assert.equal(executed.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(ledger().fees - before.fees, quote.feesIncluded);
    clock.advance(30_000);
    await until(svc, () => txStatus(executed.transactionId) === 'REFUNDED');
    const refunded = await getJson(svc, `/transactions/${executed.transactionId}`);
    assert.equal(refunded.failureReason, 'OFFRAMP_FAILED');
    // The whole amount sent comes back, the fees included; the fee ledger gives them up.
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.deepEqual({ fees: ledger().fees, inTransit: ledger().inTransit }, { fees: before.fees, inTransit: before.inTransit }, 'returned: the fees too, nothing left in transit');
    assertLedgerHolds(svc);
  });

  it('production has no simulated outcomes; SPARK_WALLET suffixes follow their own rows', async () => {
    const { customer } = await fundedCustomer(svc, 0);
    const record = svc.service.services.world.externalAccounts.get((await externalUsd(svc, customer.id, '002')).id)!;
    assert.deepEqual(payoutPlan('sandbox', record), { atExecute: 'FAIL' });
    assert.deepEqual(payoutPlan('production', record), { atExecute: 'COMPLETE' });
    const spark = (suffix: string) => payoutPlan('sandbox', { ...record, accountInfo: { accountType: 'SPARK_WALLET', address: `sp1wallet${suffix}` } });
    assert.deepEqual(spark('002'), { atExecute: 'FAIL' });
    assert.deepEqual(spark('003'), { atExecute: 'FAIL' }, 'wallet unavailable');
    assert.deepEqual(spark('004'), { atExecute: 'PROCESS', later: { afterMs: 5_000, outcome: 'FAIL_REFUND', failureReason: 'OFFRAMP_FAILED' } });
    assert.deepEqual(spark('005'), { atExecute: 'PROCESS', later: { afterMs: 30_000, outcome: 'FAIL_REFUND', failureReason: 'OFFRAMP_FAILED' } });
    assert.deepEqual(spark('006'), { atExecute: 'COMPLETE' });
  });
});

describe('payouts and quotes across a restart', () => {
  it('fires the timers of a pending quote and an in-flight payout after a restart; the ledger holds', async () => {
    const start = Date.UTC(2026, 5, 1);
    // Snapshots every few entries, so recovery goes through a snapshot of the new kinds and a replay after it.
    const first = await startTestService({ clock: new ManualClock(start), snapshotEveryEntries: 4 });
    const { customer, usd } = await fundedCustomer(first, FUNDS);
    const bob = await fundedCustomer(first, 0);
    const external = await externalUsd(first, customer.id, '003');
    const pending = await createQuote(first, quoteBody(usd.id, bob.usd.id, 500));
    const inFlight = await execute(first, (await createQuote(first, quoteBody(usd.id, external.id, AMOUNT))).id);
    assert.equal(inFlight.status, 'PROCESSING');
    await first.stop({ keepData: true });

    const clock = new ManualClock(start + 1_000);
    const svc = await startTestService({ clock, dataDir: first.dataDir });
    try {
      assert.ok(svc.reportLines.some((line) => /recovery: snapshot at [1-9]/.test(line)), svc.reportLines.join('\n'));
      assertLedgerHolds(svc);
      assert.equal((await getJson(svc, `/quotes/${pending.id}`)).status, 'PENDING');
      assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
      clock.advance(5 * 60_000);
      await until(svc, () => svc.service.services.world.quotes.get(pending.id)?.status === 'EXPIRED');
      clock.advance(60_000);
      await until(svc, () => svc.service.services.world.transactions.get(inFlight.transactionId)?.status === 'COMPLETED');
      assert.equal((await getJson(svc, `/quotes/${inFlight.id}`)).status, 'COMPLETED');
      assert.deepEqual(webhooksOf(svc, inFlight.transactionId), [
        ['OUTGOING_PAYMENT', 'PROCESSING'],
        ['OUTGOING_PAYMENT', 'COMPLETED'],
      ]);
      assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
      assert.equal(await balanceOf(svc, bob.usd.id), 0);
      assertLedgerHolds(svc);
      // Executing the expired quote after the restart is refused.
      assert.equal((await svc.request('POST', `/quotes/${pending.id}/execute`)).body.code, 'QUOTE_EXPIRED');
      await fund(svc, usd.id, 1);
    } finally {
      await svc.stop();
    }
  });
});
