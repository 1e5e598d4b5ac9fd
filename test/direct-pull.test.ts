// Quotes whose source is a customer's US bank account (direct pull, CONTRACT.md "Money"):
// the money enters the service as the quote executes, into an internal account; the
// transfer-in rows of the sandbox table decide what the bank does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertStatus, clabeEndingWith, heldActors } from './support/assertions.js';
import { accountIn, assertLedgerHolds, balanceOf, createQuote, execute, externalUsd, fundedCustomer, getJson, quoteBody, until, webhooksOf } from './support/money.js';

describe('direct pull from a US bank account', () => {
  const clock = new ManualClock(Date.UTC(2026, 8, 1));
  const svc = serviceForSuite({ clock });

  it("pulls into the customer's own USD account: COMPLETED at once, the money enters the service", async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const bank = await externalUsd(svc, customer.id, '123');
    const quote = await createQuote(svc, quoteBody(bank.id, usd.id, 2_000));
    assert.deepEqual(quote.source, { sourceType: 'ACCOUNT', accountId: bank.id, customerId: customer.id });
    assert.equal(quote.feesIncluded, 0);
    const executed = await execute(svc, quote.id);
    assert.equal(executed.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), 2_000);
    const tx = await getJson(svc, `/transactions/${executed.transactionId}`);
    assert.equal(tx.type, 'OUTGOING');
    assert.equal(tx.status, 'COMPLETED');
    assert.deepEqual(tx.source, { sourceType: 'ACCOUNT', accountId: bank.id, currency: 'USD' });
    assert.deepEqual(webhooksOf(svc, tx.id), [['OUTGOING_PAYMENT', 'COMPLETED']]);
    assertLedgerHolds(svc);
  });

  it('pulls USD into a USDC account (fees to the fee ledger), and into another customer\'s account (INCOMING for it)', async () => {
    const { customer } = await fundedCustomer(svc, 0);
    const bank = await externalUsd(svc, customer.id, '124');
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const converted = await createQuote(svc, quoteBody(bank.id, usdc.id, 100_000, { immediatelyExecute: true }));
    assert.equal(converted.status, 'COMPLETED');
    assert.ok(converted.feesIncluded > 0);
    assert.equal(await balanceOf(svc, usdc.id), converted.totalReceivingAmount);
    assertLedgerHolds(svc);

    const bob = await fundedCustomer(svc, 0);
    const toBob = await createQuote(svc, quoteBody(bank.id, bob.usd.id, 700, { immediatelyExecute: true }));
    assert.equal(toBob.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, bob.usd.id), 700);
    const incoming = (await getJson(svc, `/transactions?customerId=${bob.customer.id}`)).data;
    assert.deepEqual(incoming.map((t: any) => [t.type, t.status]), [['INCOMING', 'COMPLETED']]);
    assertLedgerHolds(svc);
  });

  it('002 and 003: refused at execute (INSUFFICIENT_FUNDS, ACCOUNT_CLOSED); nothing moves, the quote stays PENDING', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    for (const [suffix, code] of [
      ['002', 'INSUFFICIENT_FUNDS'],
      ['003', 'ACCOUNT_CLOSED'],
    ] as const) {
      const bank = await externalUsd(svc, customer.id, suffix);
      const quote = await createQuote(svc, quoteBody(bank.id, usd.id, 500));
      assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 400, code, ['source.accountId']);
      assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    }
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.equal((await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount, 0);
  });

  it('004: PROCESSING, REJECTED by the bank ~5 s later; 005: PROCESSING ~30 s, then FAILED; nothing ever moves', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const rejected = await execute(svc, (await createQuote(svc, quoteBody((await externalUsd(svc, customer.id, '004')).id, usd.id, 500))).id);
    const failed = await execute(svc, (await createQuote(svc, quoteBody((await externalUsd(svc, customer.id, '005')).id, usd.id, 500))).id);
    assert.equal(rejected.status, 'PROCESSING');
    assert.equal(failed.status, 'PROCESSING');
    clock.advance(5_000);
    const txs = svc.service.services.world.transactions;
    await until(svc, () => txs.get(rejected.transactionId)?.status === 'REJECTED');
    assert.equal((await getJson(svc, `/quotes/${rejected.id}`)).status, 'FAILED');
    assert.equal((await getJson(svc, `/transactions/${failed.transactionId}`)).status, 'PROCESSING');
    clock.advance(25_000);
    await until(svc, () => txs.get(failed.transactionId)?.status === 'FAILED');
    assert.equal((await getJson(svc, `/quotes/${failed.id}`)).status, 'FAILED');
    assert.deepEqual(webhooksOf(svc, rejected.transactionId), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'REJECTED'],
    ]);
    assert.deepEqual(webhooksOf(svc, failed.transactionId), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'FAILED'],
    ]);
    assert.equal(await balanceOf(svc, usd.id), 0);
    assertLedgerHolds(svc);
  });

  it('refuses what cannot be pulled or where a pull cannot go; nothing made', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const bank = await externalUsd(svc, customer.id, '125');
    const other = await externalUsd(svc, customer.id, '126');
    const clabe = await svc.request('POST', '/customers/external-accounts', {
      body: { customerId: customer.id, currency: 'MXN', accountInfo: { accountType: 'CLABE', clabe: clabeEndingWith('127'), beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Lopez' } } },
    });
    assertStatus(clabe, 201);
    const platformBank = await svc.request('POST', '/platform/external-accounts', {
      body: { currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '111222128', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Platform' } } },
    });
    assertStatus(platformBank, 201);
    const quotes = svc.service.services.world.quotes.count;
    assertError(await svc.request('POST', '/quotes', { body: quoteBody(bank.id, other.id, 100) }), 400, 'INVALID_INPUT', ['destination.accountId']);
    assertError(await svc.request('POST', '/quotes', { body: quoteBody(clabe.body.id, usd.id, 100) }), 400, 'INVALID_INPUT', ['source.accountId']);
    assertError(await svc.request('POST', '/quotes', { body: quoteBody(platformBank.body.id, usd.id, 100) }), 400, 'INVALID_INPUT', ['source.accountId']);
    assert.equal(svc.service.services.world.quotes.count, quotes);
  });

  it("holds the pulling customer's actor, which also owns the quote's expiry", async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const bank = await externalUsd(svc, customer.id, '129');
    let quote: any;
    const held = await heldActors(svc, async () => {
      quote = await createQuote(svc, quoteBody(bank.id, usd.id, 100));
    });
    assert.deepEqual(held, [[customer.id, usd.id]]);
    clock.advance(5 * 60_000);
    await until(svc, () => svc.service.services.world.quotes.get(quote.id)?.status === 'EXPIRED');
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 400, 'QUOTE_EXPIRED');
  });
});
