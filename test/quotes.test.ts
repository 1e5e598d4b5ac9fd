// Quotes between internal accounts: create, read, execute, expiry, immediatelyExecute, and
// every bad input refused with nothing moved (SERVICE_SPEC parts 2-4 and 8; CONTRACT.md "Money").
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HoldingClock } from './support/holding-clock.js';
import { serviceForSuite } from './support/service.js';
import { absentId, assertError, assertInvalid, assertStatus, createCustomer, heldActors, ID_RE, ISO_TIME, supportedCurrency } from './support/assertions.js';
import {
  accountIn,
  assertLedgerHolds,
  balanceOf,
  createQuote,
  execute,
  fund,
  fundedCustomer,
  getJson,
  quoteBody,
  until,
  webhooksOf,
} from './support/money.js';
import { quiesce } from './support/quiesce.js';

describe('quotes between internal accounts', () => {
  const clock = new HoldingClock(Date.UTC(2026, 0, 1));
  const svc = serviceForSuite({ clock });

  it('quotes and executes a USD transfer to another customer: both balances move, OUTGOING and INCOMING transactions, webhooks', async () => {
    const alice = await fundedCustomer(svc, 10_000, { fullName: 'Alice Sender' });
    const bob = await fundedCustomer(svc, 0, { fullName: 'Bob Receiver' });
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 2_500, { description: 'rent', purposeOfPayment: 'GIFT', senderCustomerInfo: { FULL_NAME: 'Alice Sender' } }));
    assert.match(quote.id, ID_RE('Quote'));
    assert.equal(quote.status, 'PENDING');
    assert.match(quote.createdAt, ISO_TIME);
    assert.equal(Date.parse(quote.expiresAt) - Date.parse(quote.createdAt), 5 * 60_000);
    assert.deepEqual(quote.source, { sourceType: 'ACCOUNT', accountId: alice.usd.id, customerId: alice.customer.id });
    assert.deepEqual(quote.destination, { destinationType: 'ACCOUNT', accountId: bob.usd.id, currency: 'USD' });
    assert.equal(quote.sendingCurrency.code, 'USD');
    assert.equal(quote.receivingCurrency.code, 'USD');
    assert.equal(quote.totalSendingAmount, 2_500);
    assert.equal(quote.totalReceivingAmount, 2_500);
    assert.equal(quote.feesIncluded, 0);
    assert.equal(quote.exchangeRate, 1);
    assert.equal(quote.transactionId, undefined);
    assert.deepEqual(quote.counterpartyInformation, { FULL_NAME: 'Bob Receiver' });
    assert.equal(await balanceOf(svc, alice.usd.id), 10_000, 'a quote moves nothing');

    const executed = await execute(svc, quote.id);
    assert.equal(executed.status, 'COMPLETED');
    assert.match(executed.transactionId, ID_RE('Transaction'));
    assert.equal(await balanceOf(svc, alice.usd.id), 7_500);
    assert.equal(await balanceOf(svc, bob.usd.id), 2_500);
    assert.deepEqual(await getJson(svc, `/quotes/${quote.id}`), executed);
    // Executing changes a quote's status and transaction only: every other field reads as before.
    assert.deepEqual({ ...executed, status: quote.status, transactionId: undefined }, { ...quote, transactionId: undefined });

    const out = await getJson(svc, `/transactions/${executed.transactionId}`);
    assert.equal(out.type, 'OUTGOING');
    assert.equal(out.direction, 'DEBIT');
    assert.equal(out.status, 'COMPLETED');
    assert.equal(out.customerId, alice.customer.id);
    assert.equal(out.platformCustomerId, alice.customer.platformCustomerId);
    assert.equal(out.quoteId, quote.id);
    assert.deepEqual(out.sentAmount, { amount: 2_500, currency: quote.sendingCurrency });
    assert.deepEqual(out.receivedAmount, { amount: 2_500, currency: quote.receivingCurrency });
    assert.match(out.settledAt, ISO_TIME);
    assert.equal(out.description, 'rent');
    assert.equal(typeof out.reconciliationInstructions.reference, 'string');
    assert.deepEqual(Object.keys(out.rateDetails).sort(), ['serviceApiFixedFee', 'serviceApiMultiplier', 'serviceApiVariableFeeAmount', 'serviceApiVariableFeeRate']);

    const incoming = await getJson(svc, `/transactions?customerId=${bob.customer.id}`);
    assert.equal(incoming.data.length, 1);
    const inc = incoming.data[0];
    assert.equal(inc.type, 'INCOMING');
    assert.equal(inc.direction, 'CREDIT');
    assert.equal(inc.status, 'COMPLETED');
    assert.equal(inc.sentAmount, undefined);
    assert.deepEqual(inc.receivedAmount, out.receivedAmount);
    assert.equal(inc.reconciliationInstructions.reference, out.reconciliationInstructions.reference);
    assert.deepEqual(inc.counterpartyInformation, { FULL_NAME: 'Alice Sender' });

    assert.deepEqual(webhooksOf(svc, out.id), [['OUTGOING_PAYMENT', 'COMPLETED']]);
    assert.deepEqual(webhooksOf(svc, inc.id), [['INCOMING_PAYMENT', 'COMPLETED']]);
    assertLedgerHolds(svc);
  });

  it('converts USD into the same customer\'s USDC account: fees to the fee ledger, only an OUTGOING transaction', async () => {
    const { customer, usd } = await fundedCustomer(svc, 1_000_000);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const quote = await createQuote(svc, quoteBody(usd.id, usdc.id, 100_000));
    assert.equal(quote.totalSendingAmount, 100_000);
    assert.ok(quote.feesIncluded > 0, 'a conversion carries fees');
    assert.equal(quote.rateDetails.serviceApiVariableFeeAmount + quote.rateDetails.serviceApiFixedFee + quote.rateDetails.counterpartyFixedFee, quote.feesIncluded);
    // The suite's other payments add to the same ledger: this payment's share is the difference.
    const ledger = () => ({ ...svc.service.services.world.ledger.get(`${svc.credentials.platformId}#sandbox`, 'USD') });
    const before = ledger();
    const executed = await execute(svc, quote.id);
    assert.equal(executed.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), 1_000_000 - 100_000);
    assert.equal(await balanceOf(svc, usdc.id), quote.totalReceivingAmount);
    const list = await getJson(svc, `/transactions?customerId=${customer.id}`);
    // Newest first: the conversion (OUTGOING only), then the sandbox funding's INCOMING.
    assert.deepEqual(
      list.data.map((t: any) => [t.type, t.source.sourceType]),
      [
        ['OUTGOING', 'ACCOUNT'],
        ['INCOMING', 'SANDBOX_FUNDING'],
      ],
    );
    const after = ledger();
    assert.deepEqual(
      { fees: after.fees - before.fees, inTransit: after.inTransit - before.inTransit },
      { fees: quote.feesIncluded, inTransit: 0 },
      'the fees, all of them, go to the fee ledger at once',
    );
    assertLedgerHolds(svc);
  });

  it('refuses an execute beyond the balance with 400 INSUFFICIENT_BALANCE: nothing moves, the quote stays PENDING', async () => {
    const alice = await fundedCustomer(svc, 1_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_001));
    const res = await svc.request('POST', `/quotes/${quote.id}/execute`);
    assertError(res, 400, 'INSUFFICIENT_BALANCE', ['source.accountId']);
    assert.equal(await balanceOf(svc, alice.usd.id), 1_000);
    assert.equal(await balanceOf(svc, bob.usd.id), 0);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    assert.equal((await getJson(svc, `/transactions?customerId=${alice.customer.id}&type=OUTGOING`)).totalCount, 0);
    // Funded in the meantime, the same quote executes.
    await fund(svc, alice.usd.id, 1);
    assert.equal((await execute(svc, quote.id)).status, 'COMPLETED');
    assert.equal(await balanceOf(svc, alice.usd.id), 0);
  });

  it('a balance that covers the principal but not the fees is 400 INSUFFICIENT_BALANCE; exactly principal plus fees executes', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const quote = await createQuote(svc, quoteBody(usd.id, usdc.id, 50_000, { lockedCurrencySide: 'RECEIVING' }));
    assert.ok(quote.feesIncluded > 0, 'a conversion carries fees');
    await fund(svc, usd.id, quote.totalSendingAmount - 1);
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 400, 'INSUFFICIENT_BALANCE', ['source.accountId']);
    assert.equal(await balanceOf(svc, usd.id), quote.totalSendingAmount - 1);
    assert.equal(await balanceOf(svc, usdc.id), 0);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    await fund(svc, usd.id, 1);
    assert.equal((await execute(svc, quote.id)).status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.equal(await balanceOf(svc, usdc.id), quote.totalReceivingAmount);
    assertLedgerHolds(svc);
  });

  it('executes at most once: the same Idempotency-Key replays the answer, another key or none is 409 QUOTE_ALREADY_EXECUTED', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_000));
    const first = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'idempotency-key': 'exec-1' } });
    assertStatus(first, 200);
    const again = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'idempotency-key': 'exec-1' } });
    assertStatus(again, 200);
    assert.equal(again.text, first.text);
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'idempotency-key': 'exec-2' } }), 409, 'QUOTE_ALREADY_EXECUTED');
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 409, 'QUOTE_ALREADY_EXECUTED');
    assert.equal(await balanceOf(svc, alice.usd.id), 4_000);
    assert.equal(await balanceOf(svc, bob.usd.id), 1_000);
  });

  it('expires an unexecuted quote 5 minutes after creation; executing it then is 400 QUOTE_EXPIRED and moves nothing', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_000));
    clock.advance(5 * 60_000 - 1);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    clock.advance(1);
    await until(svc, () => svc.service.services.world.quotes.get(quote.id)?.status === 'EXPIRED');
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'EXPIRED');
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 400, 'QUOTE_EXPIRED');
    assert.equal(await balanceOf(svc, alice.usd.id), 5_000);
    assert.equal(await balanceOf(svc, bob.usd.id), 0);
  });

  it('the execute decides expiry itself: its last millisecond executes, its expiry instant is 400 QUOTE_EXPIRED before the timer has run', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    const lastMoment = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_000));
    const atExpiry = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_000));
    clock.hold();
    try {
      clock.advance(Date.parse(lastMoment.expiresAt) - 1 - clock.now());
      assert.equal((await execute(svc, lastMoment.id)).status, 'COMPLETED');
      clock.advance(Date.parse(atExpiry.expiresAt) - clock.now());
      assert.ok(clock.heldCount > 0, 'the expiry timer fell due and waits');
      assert.equal(svc.service.services.world.quotes.get(atExpiry.id)?.status, 'PENDING', 'no timer has ended it');
      assertError(await svc.request('POST', `/quotes/${atExpiry.id}/execute`), 400, 'QUOTE_EXPIRED');
    } finally {
      clock.release();
    }
    assert.equal(await balanceOf(svc, alice.usd.id), 4_000);
    assert.equal(await balanceOf(svc, bob.usd.id), 1_000);
  });

  it('an executed quote does not expire: executing cancels its expiry timer', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_000));
    const timers = svc.service.services.engine.pendingTimers;
    await execute(svc, quote.id);
    assert.equal(svc.service.services.engine.pendingTimers, timers - 1);
    clock.advance(10 * 60_000);
    await quiesce(svc.service.services.engine);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'COMPLETED');
  });

  it('immediatelyExecute creates and executes in one step; beyond the balance it is 400 and nothing is made', async () => {
    const alice = await fundedCustomer(svc, 3_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 2_000, { immediatelyExecute: true }));
    assert.equal(quote.status, 'COMPLETED');
    assert.match(quote.transactionId, ID_RE('Transaction'));
    assert.equal(await balanceOf(svc, bob.usd.id), 2_000);
    const refused = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 1_001, { immediatelyExecute: true }) });
    assertError(refused, 400, 'INSUFFICIENT_BALANCE');
    assert.equal(await balanceOf(svc, alice.usd.id), 1_000);
    // The funding's INCOMING and the executed quote's OUTGOING; the refused one made none.
    assert.equal((await getJson(svc, `/transactions?customerId=${alice.customer.id}`)).totalCount, 2);
    assert.equal((await getJson(svc, `/transactions?customerId=${alice.customer.id}&type=OUTGOING`)).totalCount, 1);
  });

  it('lets the platform pay from its own account; the receiving customer gets an INCOMING transaction', async () => {
    const platformUsd = (await getJson(svc, '/platform/internal-accounts?currency=USD')).data[0];
    await fund(svc, platformUsd.id, 10_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(platformUsd.id, bob.usd.id, 700, { immediatelyExecute: true }));
    assert.deepEqual(quote.source, { sourceType: 'ACCOUNT', accountId: platformUsd.id });
    const tx = await getJson(svc, `/transactions/${quote.transactionId}`);
    assert.equal(tx.customerId, '');
    assert.equal((await getJson(svc, `/transactions?customerId=${bob.customer.id}&type=INCOMING`)).totalCount, 1);
    assert.equal(await balanceOf(svc, bob.usd.id), 700);
  });

  it('holds every actor a decision reads or writes: source account, credited account, both customers', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    let quote: any;
    const created = await heldActors(svc, async () => {
      quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100));
    });
    assert.deepEqual(created.map((a) => [...a].sort()), [[alice.usd.id, alice.customer.id, bob.customer.id, bob.usd.id].sort()]);
    const executed = await heldActors(svc, () => execute(svc, quote.id));
    assert.deepEqual(executed.map((a) => [...a].sort()), [[alice.usd.id, alice.customer.id, bob.customer.id, bob.usd.id].sort()]);
    const immediate = await heldActors(svc, () => createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true })));
    assert.deepEqual(immediate.map((a) => [...a].sort()), [[alice.usd.id, alice.customer.id, bob.customer.id, bob.usd.id].sort()]);
  });

  describe('bad input: a 4xx naming the field, nothing made, no balance moved', () => {
    let alice: { customer: any; usd: any };
    let bob: { customer: any; usd: any };
    before(async () => {
      alice = await fundedCustomer(svc, 50_000);
      bob = await fundedCustomer(svc, 0);
    });

    async function refused(body: Record<string, unknown>, status: number, code: string, field?: string): Promise<void> {
      const quotesBefore = svc.service.services.world.quotes.count;
      const res = await svc.request('POST', '/quotes', { body });
      assertError(res, status, code, field === undefined ? undefined : [field]);
      assert.equal(svc.service.services.world.quotes.count, quotesBefore, 'no quote was made');
      assert.equal(await balanceOf(svc, alice.usd.id), 50_000);
      assert.equal(await balanceOf(svc, bob.usd.id), 0);
    }

    it('wrong variants and missing fields', async () => {
      const good = quoteBody(alice.usd.id, bob.usd.id, 100);
      await refused({ ...good, source: { sourceType: 'WALLET', accountId: alice.usd.id } }, 400, 'INVALID_INPUT', 'source.sourceType');
      await refused({ ...good, source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', accountId: alice.usd.id } }, 400, 'INVALID_INPUT', 'source.accountId');
      await refused({ ...good, destination: { destinationType: 'WALLET', accountId: bob.usd.id } }, 400, 'INVALID_INPUT', 'destination.destinationType');
      await refused({ ...good, destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$bob@sandbox.uma.test' } }, 400, 'INVALID_INPUT', 'lookupId');
      await refused({ ...good, source: { sourceType: 'ACCOUNT' } }, 400, 'INVALID_INPUT', 'source.accountId');
      await refused({ ...good, lockedCurrencySide: 'BOTH' }, 400, 'INVALID_INPUT', 'lockedCurrencySide');
      const { lockedCurrencySide: _, ...noSide } = good;
      await refused(noSide, 400, 'INVALID_INPUT', 'lockedCurrencySide');
      await refused({ ...good, purposeOfPayment: 'BRIBE' }, 400, 'INVALID_INPUT', 'purposeOfPayment');
      await refused({ ...good, description: 'x'.repeat(1025) }, 400, 'INVALID_INPUT', 'description');
      await refused({ ...good, senderCustomerInfo: { FULL_NAME: 7 } }, 400, 'INVALID_INPUT', 'senderCustomerInfo.FULL_NAME');
      await refused({ ...good, immediatelyExecute: 'yes' }, 400, 'INVALID_INPUT', 'immediatelyExecute');
    });

    it('amounts: 1 to 9,000,000,000,000,000 and the platform bounds of the currency', async () => {
      const good = quoteBody(alice.usd.id, bob.usd.id, 100);
      await refused({ ...good, lockedCurrencyAmount: 0 }, 400, 'INVALID_INPUT', 'lockedCurrencyAmount');
      await refused({ ...good, lockedCurrencyAmount: 9_000_000_000_000_001 }, 400, 'INVALID_INPUT', 'lockedCurrencyAmount');
      await refused({ ...good, lockedCurrencyAmount: 1.5 }, 400, 'INVALID_INPUT', 'lockedCurrencyAmount');
      await refused({ ...good, lockedCurrencyAmount: '100' }, 400, 'INVALID_INPUT', 'lockedCurrencyAmount');
      const config = await getJson(svc, '/config');
      const res = await svc.request('PATCH', '/config', {
        body: { supportedCurrencies: config.supportedCurrencies.map((s: any) => (s.currencyCode === 'USD' ? supportedCurrency('USD', { minAmount: 50, maxAmount: 20_000 }) : s)) },
      });
      assertStatus(res, 200);
      try {
        const low = await svc.request('POST', '/quotes', { body: { ...good, lockedCurrencyAmount: 49 } });
        const lowError = assertInvalid(low, 'lockedCurrencyAmount');
        assert.match(lowError.message, /minAmount 50/);
        const high = await svc.request('POST', '/quotes', { body: { ...good, lockedCurrencyAmount: 20_001 } });
        assert.match(assertInvalid(high, 'lockedCurrencyAmount').message, /maxAmount 20000/);
        assertStatus(await svc.request('POST', '/quotes', { body: { ...good, lockedCurrencyAmount: 20_000 } }), 201);
      } finally {
        assertStatus(await svc.request('PATCH', '/config', { body: { supportedCurrencies: config.supportedCurrencies } }), 200);
      }
    });

    it('accounts: unknown, of another environment, the source itself, a currency that does not match', async () => {
      const good = quoteBody(alice.usd.id, bob.usd.id, 100);
      await refused({ ...good, source: { sourceType: 'ACCOUNT', accountId: absentId('InternalAccount') } }, 404, 'NOT_FOUND', 'source.accountId');
      await refused({ ...good, destination: { destinationType: 'ACCOUNT', accountId: absentId('InternalAccount') } }, 404, 'NOT_FOUND', 'destination.accountId');
      await refused({ ...good, destination: { destinationType: 'ACCOUNT', accountId: absentId('ExternalAccount') } }, 404, 'NOT_FOUND', 'destination.accountId');
      const prodCustomer = await createCustomer(svc, {}, 'production');
      const prodUsd = await accountIn(svc, prodCustomer.id, 'USD', 'production');
      await refused({ ...good, destination: { destinationType: 'ACCOUNT', accountId: prodUsd.id } }, 404, 'NOT_FOUND', 'destination.accountId');
      await refused({ ...good, source: { sourceType: 'ACCOUNT', accountId: prodUsd.id } }, 404, 'NOT_FOUND', 'source.accountId');
      await refused({ ...good, destination: { destinationType: 'ACCOUNT', accountId: alice.usd.id } }, 400, 'INVALID_INPUT', 'destination.accountId');
      await refused({ ...good, destination: { destinationType: 'ACCOUNT', accountId: bob.usd.id, currency: 'USDC' } }, 400, 'INVALID_INPUT', 'destination.currency');
      await refused({ ...good, destination: { destinationType: 'ACCOUNT', accountId: bob.usd.id, paymentRail: 'ACH' } }, 400, 'INVALID_INPUT', 'destination.paymentRail');
    });

    it('an EMBEDDED_WALLET source cannot immediatelyExecute, and executes only with a valid signature', async () => {
      const wallet = await accountIn(svc, alice.customer.id, 'USDB');
      assert.equal(wallet.type, 'EMBEDDED_WALLET');
      const bobUsdb = await accountIn(svc, bob.customer.id, 'USDB');
      await refused(quoteBody(wallet.id, bobUsdb.id, 100, { immediatelyExecute: true }), 400, 'INVALID_INPUT', 'immediatelyExecute');
      const quote = await createQuote(svc, quoteBody(wallet.id, bobUsdb.id, 100));
      assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 401, 'UNAUTHORIZED');
      assertError(await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'service-wallet-signature': 'c2ln' } }), 401, 'UNAUTHORIZED');
      assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    });

    it("a deleted customer's accounts neither send nor receive: 409 CONFLICT", async () => {
      const carol = await fundedCustomer(svc, 1_000);
      const pending = await createQuote(svc, quoteBody(carol.usd.id, bob.usd.id, 100));
      assertStatus(await svc.request('DELETE', `/customers/${carol.customer.id}`), 200);
      await refused(quoteBody(carol.usd.id, bob.usd.id, 100), 409, 'CONFLICT');
      await refused(quoteBody(alice.usd.id, carol.usd.id, 100), 409, 'CONFLICT');
      assertError(await svc.request('POST', `/quotes/${pending.id}/execute`), 409, 'CONFLICT');
      assert.equal(await balanceOf(svc, carol.usd.id), 1_000);
    });

    it('GET and execute of a quote that does not exist: 404', async () => {
      assertError(await svc.request('GET', `/quotes/${absentId('Quote')}`), 404, 'NOT_FOUND');
      assertError(await svc.request('POST', `/quotes/${absentId('Quote')}/execute`), 404, 'NOT_FOUND');
      assertInvalid(await svc.request('GET', '/quotes/Quote:nope'), 'quoteId');
    });

    it("another environment's quote does not exist for this one", async () => {
      const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100));
      assertError(await svc.request('GET', `/quotes/${quote.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
      assertError(await svc.request('POST', `/quotes/${quote.id}/execute`, { auth: 'production' }), 404, 'NOT_FOUND');
    });
  });
});
