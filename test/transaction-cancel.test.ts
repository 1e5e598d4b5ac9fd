// POST /transactions/{id}/cancel and /confirm (CONTRACT.md "Today's clients, second wave"):
// a bank payout still in flight (the sandbox's 003, 004 payouts, a transfer-out the bank
// holds) fails as CANCELLED and its money comes back with its fees in one entry, its outcome
// timer cancelled; anything else is 409. A receipt's delivery time is recorded and
// overwritten. Every answer is held to the vendor's published contract.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { decodeGroup } from '../src/engine/log.js';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import { assertStatus, clabeEndingWith, setCurrencies } from './support/assertions.js';
import { assertLedgerHolds, balanceOf, createQuote, execute, externalUsd, fundedCustomer, getJson, quoteBody, until, webhooksOf } from './support/money.js';
import { quiesce } from './support/quiesce.js';
import { HoldingClock } from './support/holding-clock.js';
import { assertVendorResponse } from './support/vendor-contract.js';
import { assertVendorError } from './support/vendor-error.js';

const FUNDS = 100_000;
const AMOUNT = 10_000;

/**
 * A transaction's answer held to the vendor's schema, but for the names SERVICE_SPEC.md
 * gives: `rateDetails` is the spec's subset with its `serviceApi*` names (the vendor's
 * `gridApi*`, and counterparty parts a transaction does not carry), and CONTRACT.md's
 * `CANCELLED` is a failure reason the vendor's list lacks.
 */
function assertVendorTransaction(operationId: string, body: any): void {
  const r = body.rateDetails;
  const rateDetails = {
    counterpartyMultiplier: 1,
    counterpartyFixedFee: 0,
    gridApiMultiplier: r.serviceApiMultiplier,
    gridApiFixedFee: r.serviceApiFixedFee,
    gridApiVariableFeeRate: r.serviceApiVariableFeeRate,
    gridApiVariableFeeAmount: r.serviceApiVariableFeeAmount,
  };
  const failureReason = body.failureReason === 'CANCELLED' ? { failureReason: 'QUOTE_EXECUTION_FAILED' } : {};
  assertVendorResponse(operationId, 200, { ...body, rateDetails, ...failureReason });
}

/**
 * A funded sender and its payout of AMOUNT USD to an MXN CLABE bank account ending in
 * `suffix` (converted, so it carries fees): the sender's account, the quote and its transaction.
 */
async function payout(svc: TestService, suffix: string): Promise<{ usd: any; quote: any; txId: string }> {
  const { customer, usd } = await fundedCustomer(svc, FUNDS);
  const clabe = await svc.request('POST', '/customers/external-accounts', {
    body: { customerId: customer.id, currency: 'MXN', accountInfo: { accountType: 'CLABE', clabe: clabeEndingWith(suffix), beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Lopez' } } },
  });
  assertStatus(clabe, 201);
  const quote = await createQuote(svc, quoteBody(usd.id, clabe.body.id, AMOUNT));
  assert.ok(quote.feesIncluded > 0, 'the payout carries fees, which a cancel must refund too');
  const executed = await execute(svc, quote.id);
  return { usd, quote, txId: executed.transactionId };
}

describe('cancelling a bank payout in flight', () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  const svc = serviceForSuite({ clock });
  let envId: string;
  before(async () => {
    envId = `${svc.credentials.platformId}#sandbox`;
    await setCurrencies(svc, ['USD', 'MXN']);
  });
  const ledger = () => svc.service.services.world.ledger.get(envId, 'USD');
  const cancel = (id: string, body?: unknown) => svc.request('POST', `/transactions/${id}/cancel`, body === undefined ? {} : { body });

  it('003 (PROCESSING 6 minutes): FAILED with CANCELLED, the sender refunded with the fees, the outcome timer gone', async () => {
    const before = ledger();
    const { usd, quote, txId } = await payout(svc, '003');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    const res = await cancel(txId, { reason: 'REQUESTED_AFTER_HOURS' });
    assertStatus(res, 200);
    assert.equal(res.body.status, 'FAILED');
    assert.equal(res.body.failureReason, 'CANCELLED');
    assertVendorTransaction('cancelTransaction', res.body);
    assert.deepEqual(await getJson(svc, `/transactions/${txId}`), res.body);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'FAILED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS, 'the whole amount sent, fees included, is back');
    assert.equal(ledger().inTransit, before.inTransit);
    assert.equal(ledger().fees, before.fees);
    assert.deepEqual(webhooksOf(svc, txId), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'FAILED'],
    ]);
    assertLedgerHolds(svc);
    // The 6 minutes pass: the cancelled timer plays nothing out.
    clock.advance(6 * 60_000);
    await quiesce(svc.service.services.engine);
    assert.equal((await getJson(svc, `/transactions/${txId}`)).status, 'FAILED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assertLedgerHolds(svc);
    const again = await cancel(txId);
    assertStatus(again, 409);
    assert.equal(again.body.code, 'TRANSACTION_NOT_CANCELLABLE');
    assertVendorError('cancelTransaction', 409, again.body);
  });

  it('004 before its outcome: cancelled; after its outcome fired: 409, and the refund is the outcome\'s', async () => {
    const early = await payout(svc, '004');
    clock.advance(4_999);
    assertStatus(await cancel(early.txId), 200);
    assert.equal(await balanceOf(svc, early.usd.id), FUNDS);
    const late = await payout(svc, '004');
    clock.advance(5_000);
    await until(svc, () => svc.service.services.world.transactions.get(late.txId)?.status === 'REFUNDED');
    const res = await cancel(late.txId);
    assertStatus(res, 409);
    assert.equal(res.body.code, 'TRANSACTION_NOT_CANCELLABLE');
    assert.equal(await balanceOf(svc, late.usd.id), FUNDS, 'refunded once, by its outcome');
    assertLedgerHolds(svc);
  });

  it('a transfer-out the sandbox bank holds PENDING (005) is cancelled and refunded', async () => {
    const { customer, usd } = await fundedCustomer(svc, FUNDS);
    const external = await externalUsd(svc, customer.id, '005');
    const sent = await svc.request('POST', '/transfer-out', { body: { source: { accountId: usd.id }, destination: { accountId: external.id }, amount: AMOUNT } });
    assertStatus(sent, 201);
    assert.equal(sent.body.status, 'PENDING');
    const res = await cancel(sent.body.id);
    assertStatus(res, 200);
    assert.equal(res.body.status, 'FAILED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    clock.advance(30_000);
    await quiesce(svc.service.services.engine);
    assert.equal((await getJson(svc, `/transactions/${sent.body.id}`)).status, 'FAILED');
    assertLedgerHolds(svc);
  });

  it('a settled payout, a payment between internal accounts, a delivered incoming payment: 409; an unknown id: 404', async () => {
    const settled = await payout(svc, '123');
    const res = await cancel(settled.txId);
    assertStatus(res, 409);
    assertVendorError('cancelTransaction', 409, res.body);
    const { usd } = await fundedCustomer(svc, FUNDS);
    const other = await fundedCustomer(svc, 0);
    const internal = await execute(svc, (await createQuote(svc, quoteBody(usd.id, other.usd.id, AMOUNT))).id);
    assertStatus(await cancel(internal.transactionId), 409);
    const missing = await cancel('Transaction:0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b');
    assertStatus(missing, 404);
    assertVendorError('cancelTransaction', 404, missing.body);
    const bad = await cancel(settled.txId, { reason: 7 });
    assertStatus(bad, 400);
    assertVendorError('cancelTransaction', 400, bad.body);
    assertLedgerHolds(svc);
  });
});

describe('cancelling at the moment the bank acts', () => {
  const clock = new HoldingClock(Date.UTC(2026, 4, 4));
  const svc = serviceForSuite({ clock });
  before(() => setCurrencies(svc, ['USD', 'MXN']));

  it('an outcome already due is the bank\'s: 409 even while its timer has not run, and the outcome refunds once', async () => {
    const { usd, txId } = await payout(svc, '004');
    clock.hold();
    try {
      clock.advance(5_000);
      const res = await svc.request('POST', `/transactions/${txId}/cancel`);
      assertStatus(res, 409);
      assert.equal(res.body.code, 'TRANSACTION_NOT_CANCELLABLE');
      assert.equal((await getJson(svc, `/transactions/${txId}`)).status, 'PROCESSING');
    } finally {
      clock.release();
    }
    await until(svc, () => svc.service.services.world.transactions.get(txId)?.status === 'REFUNDED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assertLedgerHolds(svc);
  });
});

describe('confirming receipt delivery', () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 2));
  const svc = serviceForSuite({ clock });
  before(() => setCurrencies(svc, ['USD', 'MXN']));
  const confirm = (id: string, body?: unknown) => svc.request('POST', `/transactions/${id}/confirm`, body === undefined ? {} : { body });

  it('records the time given, or the time of the request, and overwrites it when called again', async () => {
    const { txId } = await payout(svc, '123');
    const given = await confirm(txId, { receiptDeliveryConfirmedAt: '2026-05-01T14:31:00Z' });
    assertStatus(given, 200);
    assertVendorTransaction('confirmReceiptDelivery', given.body);
    assert.equal(given.body.receiptDeliveryConfirmedAt, '2026-05-01T14:31:00.000Z');
    assert.equal((await getJson(svc, `/transactions/${txId}`)).receiptDeliveryConfirmedAt, '2026-05-01T14:31:00.000Z');
    clock.advance(60_000);
    const now = await confirm(txId);
    assertStatus(now, 200);
    assertVendorTransaction('confirmReceiptDelivery', now.body);
    assert.equal(now.body.receiptDeliveryConfirmedAt, new Date(clock.now()).toISOString());
    assert.equal((await getJson(svc, `/transactions/${txId}`)).receiptDeliveryConfirmedAt, new Date(clock.now()).toISOString());
  });

  it('a malformed time is a 400 naming the field; an unknown transaction a 404', async () => {
    const { txId } = await payout(svc, '123');
    const bad = await confirm(txId, { receiptDeliveryConfirmedAt: 'yesterday' });
    assertStatus(bad, 400);
    assert.equal(bad.body.details[0].field, 'receiptDeliveryConfirmedAt');
    assertVendorError('confirmReceiptDelivery', 400, bad.body);
    assert.equal((await getJson(svc, `/transactions/${txId}`)).receiptDeliveryConfirmedAt, undefined);
    const missing = await confirm('Transaction:0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b');
    assertStatus(missing, 404);
    assertVendorError('confirmReceiptDelivery', 404, missing.body);
  });
});

describe('a cancel in the log', () => {
  it('is one entry that fails, refunds and cancels the timer: a crash right after it recovers all of it', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 3));
    const dataDir = mkdtempSync(join(tmpdir(), 'cancel-entry-'));
    let svc = await startTestService({ clock, dataDir });
    try {
      await setCurrencies(svc, ['USD', 'MXN']);
      const { usd, txId } = await payout(svc, '003');
      assertStatus(await svc.request('POST', `/transactions/${txId}/cancel`), 200);
      await svc.stop({ keepData: true });
      // What a kill -9 just after the cancel's entry leaves: the log up to that entry, nothing after it.
      const root = open({ path: dataDir });
      try {
        const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
        const entries = [...log.getRange()].flatMap(({ key, value }) => decodeGroup<{ type: string; id?: string }>(key, value));
        const cancelled = entries.filter((entry) => entry.events.some((e) => e.type === 'cancel.decided'));
        assert.equal(cancelled.length, 1);
        const entry = cancelled[0]!;
        assert.deepEqual(
          entry.events.map((e) => (e.type === '$timer.cancel' ? `${e.type} ${e.id}` : e.type)),
          ['cancel.decided', `$timer.cancel ${txId}`],
        );
        for (const { key } of [...log.getRange({ start: entry.seq + 1 })]) await log.remove(key);
      } finally {
        await root.close();
      }
      svc = await startTestService({ clock, dataDir });
      const tx = await getJson(svc, `/transactions/${txId}`);
      assert.equal(tx.status, 'FAILED');
      assert.equal(tx.failureReason, 'CANCELLED');
      assert.equal(await balanceOf(svc, usd.id), FUNDS);
      assertLedgerHolds(svc);
      clock.advance(6 * 60_000);
      await quiesce(svc.service.services.engine);
      assert.equal((await getJson(svc, `/transactions/${txId}`)).status, 'FAILED', 'no outcome timer survived the cancel');
    } finally {
      await svc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
