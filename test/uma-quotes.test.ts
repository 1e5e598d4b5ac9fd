// Quotes to UMA addresses (SERVICE_SPEC parts 3 and 4, CONTRACT.md "Money"): through a
// receiver lookup, to a local customer (a transfer between internal accounts) or to a
// sandbox test address; the lookup's refusals, each with nothing moved.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite } from './support/service.js';
import { absentId, assertError, assertStatus, supportedCurrency } from './support/assertions.js';
import { assertLedgerHolds, balanceOf, createQuote, execute, fund, fundedCustomer, getJson, until, webhooksOf } from './support/money.js';

const TEST_DOMAIN = 'sandbox.uma.test';

describe('quotes to UMA addresses', () => {
  const clock = new ManualClock(Date.UTC(2026, 7, 1));
  const svc = serviceForSuite({ clock });

  async function lookup(address: string): Promise<string> {
    const res = await svc.request('GET', `/receiver/uma/${encodeURIComponent(address)}`);
    assertStatus(res, 200);
    return res.body.lookupId;
  }

  const umaQuote = (sourceId: string, umaAddress: string, lookupId: string | undefined, over: Record<string, unknown> = {}): Record<string, unknown> => ({
    source: { sourceType: 'ACCOUNT', accountId: sourceId },
    destination: { destinationType: 'UMA_ADDRESS', umaAddress },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: 1_000,
    ...(lookupId !== undefined ? { lookupId } : {}),
    ...over,
  });

  it("pays a local customer's UMA address: the two customers' internal accounts, OUTGOING and INCOMING", async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0, { fullName: 'Bob Uma' });
    const quote = await createQuote(svc, umaQuote(alice.usd.id, bob.customer.umaAddress, await lookup(bob.customer.umaAddress)));
    assert.equal(quote.status, 'PENDING');
    assert.deepEqual(quote.destination, { destinationType: 'UMA_ADDRESS', umaAddress: bob.customer.umaAddress, currency: 'USD' });
    assert.deepEqual(quote.counterpartyInformation, { FULL_NAME: 'Bob Uma' });
    const executed = await execute(svc, quote.id);
    assert.equal(executed.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, alice.usd.id), 4_000);
    assert.equal(await balanceOf(svc, bob.usd.id), 1_000);
    const out = await getJson(svc, `/transactions/${executed.transactionId}`);
    assert.equal(out.type, 'OUTGOING');
    assert.deepEqual(out.destination, quote.destination);
    const incoming = (await getJson(svc, `/transactions?customerId=${bob.customer.id}`)).data;
    assert.deepEqual(incoming.map((t: any) => [t.type, t.status]), [['INCOMING', 'COMPLETED']]);
    assert.deepEqual(webhooksOf(svc, incoming[0].id), [['INCOMING_PAYMENT', 'COMPLETED']]);
    assertLedgerHolds(svc);
  });

  it('refuses a missing, unknown, used, expired or mismatched lookup, and an UMA destination without its address; nothing moves', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    const carol = await fundedCustomer(svc, 0);
    const refused = async (body: Record<string, unknown>, status: number, code: string, field: string): Promise<void> => {
      const quotes = svc.service.services.world.quotes.count;
      assertError(await svc.request('POST', '/quotes', { body }), status, code, [field]);
      assert.equal(svc.service.services.world.quotes.count, quotes);
      assert.equal(await balanceOf(svc, alice.usd.id), 5_000);
      assert.equal(await balanceOf(svc, bob.usd.id), 0);
    };
    await refused(umaQuote(alice.usd.id, bob.customer.umaAddress, undefined), 400, 'INVALID_INPUT', 'lookupId');
    await refused(umaQuote(alice.usd.id, bob.customer.umaAddress, absentId('Lookup')), 400, 'INVALID_INPUT', 'lookupId');
    const forBob = await lookup(bob.customer.umaAddress);
    await refused(umaQuote(alice.usd.id, carol.customer.umaAddress, forBob), 400, 'INVALID_INPUT', 'destination.umaAddress');
    await refused({ ...umaQuote(alice.usd.id, bob.customer.umaAddress, forBob), destination: { destinationType: 'UMA_ADDRESS' } }, 400, 'INVALID_INPUT', 'destination.umaAddress');
    await refused({ ...umaQuote(alice.usd.id, bob.customer.umaAddress, forBob), destination: { destinationType: 'ACCOUNT', umaAddress: bob.customer.umaAddress } }, 400, 'INVALID_INPUT', 'destination.umaAddress');
    await refused({ ...umaQuote(alice.usd.id, bob.customer.umaAddress, forBob), destination: { destinationType: 'ACCOUNT' } }, 400, 'INVALID_INPUT', 'destination.accountId');
    await refused(umaQuote(alice.usd.id, bob.customer.umaAddress, forBob, { destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.customer.umaAddress, currency: 'EUR' } }), 400, 'INVALID_INPUT', 'destination.currency');
    await createQuote(svc, umaQuote(alice.usd.id, bob.customer.umaAddress, forBob));
    await refused(umaQuote(alice.usd.id, bob.customer.umaAddress, forBob), 409, 'LOOKUP_ALREADY_USED', 'lookupId');
    const stale = await lookup(bob.customer.umaAddress);
    clock.advance(5 * 60_000);
    await refused(umaQuote(alice.usd.id, bob.customer.umaAddress, stale), 400, 'LOOKUP_EXPIRED', 'lookupId');
  });

  it("requires the payer data the receiver's currency asks for: 400 MISSING_MANDATORY_PAYEE_DATA naming each field", async () => {
    const config = await getJson(svc, '/config');
    const fields = [
      { name: 'FULL_NAME', mandatory: true },
      { name: 'BIRTH_DATE', mandatory: false },
    ];
    assertStatus(await svc.request('PATCH', '/config', { body: { supportedCurrencies: [supportedCurrency('USD', { requiredCounterpartyFields: fields }), supportedCurrency('USDC'), supportedCurrency('USDB')] } }), 200);
    try {
      const alice = await fundedCustomer(svc, 5_000);
      const bob = await fundedCustomer(svc, 0);
      const id = await lookup(bob.customer.umaAddress);
      const res = await svc.request('POST', '/quotes', { body: umaQuote(alice.usd.id, bob.customer.umaAddress, id) });
      assertError(res, 400, 'MISSING_MANDATORY_PAYEE_DATA', ['senderCustomerInfo.FULL_NAME']);
      assert.equal(await balanceOf(svc, alice.usd.id), 5_000);
      const quote = await createQuote(svc, umaQuote(alice.usd.id, bob.customer.umaAddress, id, { senderCustomerInfo: { FULL_NAME: 'Alice Payer' }, immediatelyExecute: true }));
      assert.equal(quote.status, 'COMPLETED');
      const incoming = (await getJson(svc, `/transactions?customerId=${bob.customer.id}`)).data[0];
      assert.deepEqual(incoming.counterpartyInformation, { FULL_NAME: 'Alice Payer' });
    } finally {
      assertStatus(await svc.request('PATCH', '/config', { body: { supportedCurrencies: config.supportedCurrencies } }), 200);
    }
  });

  it('the sandbox test addresses: $success completes, $pending.long stays PROCESSING for minutes, $fail.compliance fails and moves nothing', async () => {
    const alice = await fundedCustomer(svc, 10_000);
    const pay = async (local: string): Promise<any> => {
      const address = `${local}@${TEST_DOMAIN}`;
      const quote = await execute(svc, (await createQuote(svc, umaQuote(alice.usd.id, address, await lookup(address)))).id);
      return { quote, tx: await getJson(svc, `/transactions/${quote.transactionId}`) };
    };
    const success = await pay('$success.usd');
    assert.equal(success.tx.status, 'COMPLETED');
    assert.deepEqual(success.tx.destination, { destinationType: 'UMA_ADDRESS', umaAddress: `$success.usd@${TEST_DOMAIN}`, currency: 'USD' });
    assert.equal(await balanceOf(svc, alice.usd.id), 9_000);

    // EUR is not among the platform's currencies: the receiving side needs only a rate.
    const euro = await pay('$success.eur');
    assert.equal(euro.tx.status, 'COMPLETED');
    assert.equal(euro.tx.receivedAmount.currency.code, 'EUR');
    assert.equal(await balanceOf(svc, alice.usd.id), 8_000);
    await fund(svc, alice.usd.id, 1_000);

    const failed = await pay('$fail.compliance.usd');
    assert.equal(failed.quote.status, 'FAILED');
    assert.equal(failed.tx.status, 'FAILED');
    assert.equal(failed.tx.failureReason, 'PAY_REQUEST_FAILED');
    assert.equal(await balanceOf(svc, alice.usd.id), 9_000);

    const pending = await pay('$pending.long.usd');
    assert.equal(pending.tx.status, 'PROCESSING');
    assert.equal(await balanceOf(svc, alice.usd.id), 8_000);
    clock.advance(5 * 60_000);
    await svc.service.services.engine.settled();
    assert.equal((await getJson(svc, `/transactions/${pending.tx.id}`)).status, 'PROCESSING');
    clock.advance(60_000);
    await until(svc, () => svc.service.services.world.transactions.get(pending.tx.id)?.status === 'COMPLETED');
    assert.deepEqual(webhooksOf(svc, pending.tx.id), [
      ['OUTGOING_PAYMENT', 'PROCESSING'],
      ['OUTGOING_PAYMENT', 'COMPLETED'],
    ]);
    assert.equal(await balanceOf(svc, alice.usd.id), 8_000);
    assertLedgerHolds(svc);
  });
});
