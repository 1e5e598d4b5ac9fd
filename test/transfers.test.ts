// Transfers between external bank accounts and internal accounts (CONTRACT.md "Money"):
// every sandbox row on a manual clock, with statuses, webhook events, balances and the
// ledger (in transit) at every step; validation, whole-balance transfer-out, idempotency.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertStatus, setCurrencies } from './support/assertions.js';
import { accountIn, accountStatusesOf, assertLedgerHolds, balanceOf, externalUsd, fundedCustomer, getJson, until, webhooksOf } from './support/money.js';

const FUNDS = 100_000;
const AMOUNT = 10_000;

describe('transfers (transfer-in, transfer-out)', () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  let envId: string;
  const svc = serviceForSuite({ clock });
  before(async () => {
    envId = `${svc.credentials.platformId}#sandbox`;
    await setCurrencies(svc, ['USD', 'USDC']);
  });

  const inTransit = () => svc.service.services.world.ledger.get(envId, 'USD').inTransit;
  const txStatus = (id: string) => svc.service.services.world.transactions.get(id)?.status;

  /** A customer whose USD account holds `funds`, and its external USD account ending in `suffix`. */
  async function accounts(suffix: string, funds = FUNDS): Promise<{ usd: any; external: any; customer: any }> {
    const { customer, usd } = await fundedCustomer(svc, funds);
    const external = await externalUsd(svc, customer.id, suffix);
    return { customer, usd, external };
  }

  const transferIn = (external: string, internal: string, amount: number, headers: Record<string, string> = {}) =>
    svc.request('POST', '/transfer-in', { body: { source: { accountId: external }, destination: { accountId: internal }, amount }, headers });
  const transferOut = (internal: string, external: string, over: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    svc.request('POST', '/transfer-out', { body: { source: { accountId: internal }, destination: { accountId: external }, ...over }, headers });

  async function settleTimers(ms: number): Promise<void> {
    clock.advance(ms);
    await svc.service.services.engine.settled();
  }

  it('transfer-in: COMPLETED at once, the balance raised (inflow), one INCOMING_PAYMENT event', async () => {
    const { usd, external, customer } = await accounts('123', 0);
    const res = await transferIn(external.id, usd.id, AMOUNT);
    assertStatus(res, 201);
    const tx = res.body;
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.type, 'INCOMING');
    assert.equal(tx.direction, 'CREDIT');
    assert.equal(tx.customerId, customer.id);
    assert.equal(tx.quoteId, undefined);
    assert.deepEqual(tx.source, { sourceType: 'ACCOUNT', accountId: external.id, currency: 'USD' });
    assert.deepEqual(tx.destination, { destinationType: 'ACCOUNT', accountId: usd.id, currency: 'USD' });
    assert.equal(tx.receivedAmount.amount, AMOUNT);
    assert.equal(typeof tx.reconciliationInstructions.reference, 'string');
    assert.equal(await balanceOf(svc, usd.id), AMOUNT);
    assert.deepEqual(await getJson(svc, `/transactions/${tx.id}`), tx);
    assert.deepEqual(webhooksOf(svc, tx.id), [['INCOMING_PAYMENT', 'COMPLETED']]);
    assert.deepEqual(await accountStatusesOf(svc, usd.id), [AMOUNT], 'the balance change is reported as ACCOUNT_STATUS');
    assertLedgerHolds(svc);
  });

  it('transfer-out: COMPLETED at once, settled out of the service, one OUTGOING_PAYMENT event; remittanceInformation and paymentRail shown', async () => {
    const { usd, external } = await accounts('123');
    const before = inTransit();
    const res = await transferOut(usd.id, external.id, { amount: AMOUNT, remittanceInformation: 'rent', destination: { accountId: external.id, paymentRail: 'ACH' } });
    assertStatus(res, 201);
    const tx = res.body;
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.type, 'OUTGOING');
    assert.equal(tx.direction, 'DEBIT');
    assert.equal(tx.sentAmount.amount, AMOUNT);
    assert.equal(tx.description, 'rent');
    assert.deepEqual(tx.destination, { destinationType: 'ACCOUNT', accountId: external.id, currency: 'USD', paymentRail: 'ACH' });
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(inTransit(), before);
    assert.deepEqual(webhooksOf(svc, tx.id), [['OUTGOING_PAYMENT', 'COMPLETED']]);
    assert.deepEqual((await accountStatusesOf(svc, usd.id)).slice(-1), [FUNDS - AMOUNT], 'the balance change is reported as ACCOUNT_STATUS');
    assertLedgerHolds(svc);
  });

  it('transfer-out without an amount moves the whole balance; with nothing left it is 400 INSUFFICIENT_BALANCE', async () => {
    const { usd, external } = await accounts('123');
    const res = await transferOut(usd.id, external.id);
    assertStatus(res, 201);
    assert.equal(res.body.sentAmount.amount, FUNDS);
    assert.equal(await balanceOf(svc, usd.id), 0);
    assertError(await transferOut(usd.id, external.id), 400, 'INSUFFICIENT_BALANCE', ['amount']);
    assertLedgerHolds(svc);
  });

  it('transfer-out of more than the balance: 400 INSUFFICIENT_BALANCE naming amount, nothing moves', async () => {
    const { usd, external, customer } = await accounts('123', 500);
    assertError(await transferOut(usd.id, external.id, { amount: 501 }), 400, 'INSUFFICIENT_BALANCE', ['amount']);
    assert.equal(await balanceOf(svc, usd.id), 500);
    assert.equal((await getJson(svc, `/transactions?customerId=${customer.id}&type=OUTGOING`)).totalCount, 0, 'no transaction is made');
  });

  it('transfer-out of exactly the balance, named as the amount: 201, the account left at 0; one more is refused', async () => {
    const { usd, external } = await accounts('123', 500);
    const res = await transferOut(usd.id, external.id, { amount: 500 });
    assertStatus(res, 201);
    assert.equal(res.body.sentAmount.amount, 500);
    assert.equal(await balanceOf(svc, usd.id), 0);
    assertError(await transferOut(usd.id, external.id, { amount: 1 }), 400, 'INSUFFICIENT_BALANCE', ['amount']);
    assertLedgerHolds(svc);
  });

  for (const [suffix, code] of [
    ['002', 'INSUFFICIENT_FUNDS'],
    ['003', 'ACCOUNT_CLOSED'],
  ] as const) {
    it(`${suffix}: 400 ${code} at once both ways, nothing moves and no transaction is made`, async () => {
      const { usd, external } = await accounts(suffix);
      const count = svc.service.services.world.transactions.count;
      assertError(await transferIn(external.id, usd.id, AMOUNT), 400, code, ['source.accountId']);
      assertError(await transferOut(usd.id, external.id, { amount: AMOUNT }), 400, code, ['destination.accountId']);
      assert.equal(await balanceOf(svc, usd.id), FUNDS);
      assert.equal(svc.service.services.world.transactions.count, count);
      assertLedgerHolds(svc);
    });
  }

  it('004 transfer-in: PROCESSING, then REJECTED ~5 s later; nothing moves', async () => {
    const { usd, external } = await accounts('004', 0);
    const res = await transferIn(external.id, usd.id, AMOUNT);
    assertStatus(res, 201);
    assert.equal(res.body.status, 'PROCESSING');
    await settleTimers(4_999);
    assert.equal(txStatus(res.body.id), 'PROCESSING');
    clock.advance(1);
    await until(svc, () => txStatus(res.body.id) === 'REJECTED');
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.deepEqual(webhooksOf(svc, res.body.id), [
      ['INCOMING_PAYMENT', 'PROCESSING'],
      ['INCOMING_PAYMENT', 'REJECTED'],
    ]);
    assertLedgerHolds(svc);
  });

  it('005 transfer-in: PENDING ~30 s, then FAILED; nothing moves', async () => {
    const { usd, external } = await accounts('005', 0);
    const res = await transferIn(external.id, usd.id, AMOUNT);
    assertStatus(res, 201);
    assert.equal(res.body.status, 'PENDING');
    await settleTimers(29_999);
    assert.equal(txStatus(res.body.id), 'PENDING');
    clock.advance(1);
    await until(svc, () => txStatus(res.body.id) === 'FAILED');
    assert.equal(await balanceOf(svc, usd.id), 0);
    assertLedgerHolds(svc);
  });

  it('004 transfer-out: PROCESSING in transit, then REJECTED ~5 s later and REFUNDED to the source', async () => {
    const { usd, external } = await accounts('004');
    const before = inTransit();
    const res = await transferOut(usd.id, external.id, { amount: AMOUNT });
    assertStatus(res, 201);
    assert.equal(res.body.status, 'PROCESSING');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(inTransit(), before + AMOUNT);
    assertLedgerHolds(svc);
    await settleTimers(4_999);
    assert.equal(txStatus(res.body.id), 'PROCESSING');
    clock.advance(1);
    await until(svc, () => txStatus(res.body.id) === 'REFUNDED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.equal(inTransit(), before);
    assert.deepEqual(webhooksOf(svc, res.body.id), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'REJECTED'],
      ['OUTGOING_PAYMENT', 'REFUNDED'],
    ]);
    assertLedgerHolds(svc);
  });

  it('005 transfer-out: PENDING ~30 s in transit, then FAILED and REFUNDED to the source', async () => {
    const { usd, external } = await accounts('005');
    const before = inTransit();
    const res = await transferOut(usd.id, external.id, { amount: AMOUNT });
    assertStatus(res, 201);
    assert.equal(res.body.status, 'PENDING');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assert.equal(inTransit(), before + AMOUNT);
    await settleTimers(29_999);
    assert.equal(txStatus(res.body.id), 'PENDING');
    clock.advance(1);
    await until(svc, () => txStatus(res.body.id) === 'REFUNDED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.equal(inTransit(), before);
    assert.deepEqual(webhooksOf(svc, res.body.id), [
      ['OUTGOING_PAYMENT', 'PENDING'],
      ['OUTGOING_PAYMENT', 'FAILED'],
      ['OUTGOING_PAYMENT', 'REFUNDED'],
    ]);
    assertLedgerHolds(svc);
  });

  it('different currencies: 400 naming destination.accountId, nothing moves', async () => {
    const { customer, usd, external } = await accounts('123');
    const usdc = await accountIn(svc, customer.id, 'USDC');
    assertError(await transferIn(external.id, usdc.id, AMOUNT), 400, 'INVALID_INPUT', ['destination.accountId']);
    assertError(await transferOut(usdc.id, external.id, { amount: 1 }), 400, 'INVALID_INPUT', ['destination.accountId']);
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.equal(await balanceOf(svc, usdc.id), 0);
  });

  it('another customer\'s bank account: 400 naming it; unknown accounts: 404 naming the field; bad bodies: 400 naming the field', async () => {
    const { usd, external } = await accounts('123');
    const other = await fundedCustomer(svc, 0);
    assertError(await transferIn(external.id, other.usd.id, AMOUNT), 400, 'INVALID_INPUT', ['source.accountId']);
    assertError(await transferIn('ExternalAccount:nope', usd.id, AMOUNT), 404, 'NOT_FOUND', ['source.accountId']);
    assertError(await transferOut('InternalAccount:nope', external.id), 404, 'NOT_FOUND', ['source.accountId']);
    assertError(await svc.request('POST', '/transfer-in', { body: { source: { accountId: external.id }, destination: { accountId: usd.id } } }), 400, 'INVALID_INPUT', ['amount']);
    assertError(await transferOut(usd.id, external.id, { amount: 0 }), 400, 'INVALID_INPUT', ['amount']);
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.equal(await balanceOf(svc, other.usd.id), 0);
  });

  it('honours Idempotency-Key: the same key and body replay the first answer; nothing moves twice', async () => {
    const { usd, external } = await accounts('123');
    const first = await transferOut(usd.id, external.id, { amount: AMOUNT }, { 'idempotency-key': 'out-1' });
    assertStatus(first, 201);
    const again = await transferOut(usd.id, external.id, { amount: AMOUNT }, { 'idempotency-key': 'out-1' });
    assertStatus(again, 201);
    assert.equal(again.text, first.text);
    assertError(await transferOut(usd.id, external.id, { amount: 1 }, { 'idempotency-key': 'out-1' }), 409, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
  });
});
