// REALTIME_FUNDING quotes and POST /sandbox/send (CONTRACT.md "Money"): the quote carries
// payment instructions and waits; the send delivers the money, which is paid to the
// destination in the same entry. Wrong currency or amount, expiry, a second send, and the
// refusals at quote time leave balances and the quote as they were.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertStatus, setCurrencies } from './support/assertions.js';
import { accountIn, accountStatusesOf, assertLedgerHolds, balanceOf, createQuote, externalUsd, fundedCustomer, getJson, webhooksOf } from './support/money.js';

const AMOUNT = 10_000;

describe('REALTIME_FUNDING quotes and /sandbox/send', () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  const svc = serviceForSuite({ clock });
  before(async () => {
    await setCurrencies(svc, ['USD', 'USDC', 'BTC']);
  });

  const fundingQuote = (customerId: string | undefined, currency: string, destinationId: string, over: Record<string, unknown> = {}) => ({
    source: { sourceType: 'REALTIME_FUNDING', currency, ...(customerId !== undefined ? { customerId } : {}) },
    destination: { destinationType: 'ACCOUNT', accountId: destinationId },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: AMOUNT,
    ...over,
  });
  const sendMoney = (body: Record<string, unknown>, headers: Record<string, string> = {}) => svc.request('POST', '/sandbox/send', { body, headers });

  it('a fiat funding quote shows a bank account with a unique reference and waits; the send by quoteId credits the destination', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, fundingQuote(customer.id, 'USD', usd.id, { description: 'top-up' }));
    assert.equal(quote.status, 'PENDING');
    assert.deepEqual(quote.source, { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: customer.id });
    assert.equal(quote.paymentInstructions.length, 1);
    const info = quote.paymentInstructions[0].accountOrWalletInfo;
    assert.equal(info.accountType, 'USD_ACCOUNT');
    assert.equal(typeof info.reference, 'string');
    const other = await createQuote(svc, fundingQuote(customer.id, 'USD', usd.id));
    assert.notEqual(other.paymentInstructions[0].accountOrWalletInfo.reference, info.reference);
    assert.equal(await balanceOf(svc, usd.id), 0);

    const res = await sendMoney({ quoteId: quote.id, currencyCode: 'USD' });
    assertStatus(res, 200);
    const tx = res.body;
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.type, 'INCOMING');
    assert.equal(tx.quoteId, quote.id);
    assert.deepEqual(tx.source, { sourceType: 'REALTIME_FUNDING', currency: 'USD' });
    assert.equal(tx.reconciliationInstructions.reference, info.reference);
    assert.equal(tx.description, 'top-up');
    assert.equal(await balanceOf(svc, usd.id), quote.totalReceivingAmount);
    const after = await getJson(svc, `/quotes/${quote.id}`);
    assert.equal(after.status, 'COMPLETED');
    assert.equal(after.transactionId, tx.id);
    assert.deepEqual(webhooksOf(svc, tx.id), [['INCOMING_PAYMENT', 'COMPLETED']]);
    assert.deepEqual(await accountStatusesOf(svc, usd.id), [quote.totalReceivingAmount], 'the balance change is reported as ACCOUNT_STATUS');
    assertError(await sendMoney({ quoteId: quote.id, currencyCode: 'USD' }), 409, 'QUOTE_ALREADY_EXECUTED');
    assert.equal(await balanceOf(svc, usd.id), quote.totalReceivingAmount);
    assertLedgerHolds(svc);
  });

  it("the spec's {customerId, currency} source; the send by reference needs the exact amount", async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const body = fundingQuote(customer.id, 'USD', usd.id);
    const quote = await createQuote(svc, { ...body, source: { customerId: customer.id, currency: 'USD' } });
    assert.equal(quote.source.sourceType, 'REALTIME_FUNDING');
    const reference = quote.paymentInstructions[0].accountOrWalletInfo.reference;
    assertError(await sendMoney({ reference, currencyCode: 'USD' }), 400, 'INVALID_INPUT', ['currencyAmount']);
    assertError(await sendMoney({ reference, currencyCode: 'USD', currencyAmount: quote.totalSendingAmount - 1 }), 400, 'INVALID_INPUT', ['currencyAmount']);
    assertError(await sendMoney({ reference, currencyCode: 'EUR', currencyAmount: quote.totalSendingAmount }), 400, 'INVALID_INPUT', ['currencyCode']);
    assertError(await sendMoney({ reference: 'UMANOSUCHREFERENCE', currencyCode: 'USD', currencyAmount: 1 }), 404, 'NOT_FOUND', ['reference']);
    assertError(await sendMoney({ currencyCode: 'USD' }), 400, 'INVALID_INPUT', ['quoteId']);
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    const res = await sendMoney({ reference, currencyCode: 'USD', currencyAmount: quote.totalSendingAmount }, { 'idempotency-key': 'send-1' });
    assertStatus(res, 200);
    const again = await sendMoney({ reference, currencyCode: 'USD', currencyAmount: quote.totalSendingAmount }, { 'idempotency-key': 'send-1' });
    assert.equal(again.text, res.text);
    assert.equal(await balanceOf(svc, usd.id), quote.totalReceivingAmount);
    assertLedgerHolds(svc);
  });

  it('an expired funding quote refuses the send: 400 QUOTE_EXPIRED, nothing moves', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, fundingQuote(customer.id, 'USD', usd.id));
    clock.advance(5 * 60_000);
    await svc.service.services.engine.settled();
    assertError(await sendMoney({ quoteId: quote.id, currencyCode: 'USD' }), 400, 'QUOTE_EXPIRED');
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'EXPIRED');
    assertLedgerHolds(svc);
  });

  it('a BTC funding quote shows a Spark address; the money is converted into the USD destination', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, fundingQuote(customer.id, 'BTC', usd.id, { lockedCurrencyAmount: 100_000 }));
    const info = quote.paymentInstructions[0].accountOrWalletInfo;
    assert.equal(info.accountType, 'SPARK_WALLET');
    assert.equal(info.assetType, 'BTC');
    assert.equal(typeof info.address, 'string');
    const res = await sendMoney({ quoteId: quote.id, currencyCode: 'BTC', currencyAmount: quote.totalSendingAmount });
    assertStatus(res, 200);
    assert.equal(res.body.receivedAmount.amount, quote.totalReceivingAmount);
    assert.equal(await balanceOf(svc, usd.id), quote.totalReceivingAmount);
    assertLedgerHolds(svc);
  });

  it("the platform's own funding quote (no customerId) credits the platform's account", async () => {
    const platformUsd = (await getJson(svc, '/platform/internal-accounts?currency=USD')).data[0];
    const before = platformUsd.balance.amount;
    const quote = await createQuote(svc, fundingQuote(undefined, 'USD', platformUsd.id));
    assert.deepEqual(quote.source, { sourceType: 'REALTIME_FUNDING', currency: 'USD' });
    assertStatus(await sendMoney({ quoteId: quote.id, currencyCode: 'USD' }), 200);
    assert.equal(await balanceOf(svc, platformUsd.id), before + quote.totalReceivingAmount);
    assertLedgerHolds(svc);
  });

  it('refusals at quote and execute time name the field; no quote is made', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const bank = await externalUsd(svc, customer.id, '123');
    const count = () => svc.service.services.world.quotes.count;
    const before = count();
    const refused = async (body: Record<string, unknown>, status: number, code: string, field: string) =>
      assertError(await svc.request('POST', '/quotes', { body }), status, code, [field]);
    await refused(fundingQuote(customer.id, 'USD', bank.id), 400, 'INVALID_INPUT', 'destination.accountId');
    await refused(fundingQuote(customer.id, 'USD', usd.id, { immediatelyExecute: true }), 400, 'INVALID_INPUT', 'immediatelyExecute');
    await refused(fundingQuote(customer.id, 'USDC', usdc.id), 400, 'INVALID_INPUT', 'source.currency');
    await refused({ ...fundingQuote(customer.id, 'USD', usd.id), source: { sourceType: 'REALTIME_FUNDING', customerId: customer.id } }, 400, 'INVALID_INPUT', 'source.currency');
    await refused({ ...fundingQuote(customer.id, 'USD', usd.id), source: { currency: 'USD' } }, 400, 'INVALID_INPUT', 'source.customerId');
    await refused(fundingQuote('Customer:00000000-0000-4000-8000-000000000000', 'USD', usd.id), 404, 'NOT_FOUND', 'source.customerId');
    assert.equal(count(), before);
    const quote = await createQuote(svc, fundingQuote(customer.id, 'USD', usd.id));
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 400, 'INVALID_INPUT', ['source.sourceType']);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    assert.equal(await balanceOf(svc, usd.id), 0);
  });
});
