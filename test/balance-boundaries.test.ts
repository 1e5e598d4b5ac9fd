// A payment debits its source by the quote's totalSendingAmount, principal plus fees
// (docs/money.md), so the balance check must compare the balance with that total: a
// balance between the principal and the total is 400 INSUFFICIENT_BALANCE with nothing
// moved, and a balance of exactly the total pays. If a decision let such a payment
// through, the apply guard (no negative balance, actors/internal-account.ts) would refuse
// it after the decision, with memory possibly ahead of the log: the process stops (exit
// 70) and one request takes the service down. So these tests use fee-bearing,
// cross-currency quotes, check that the service is still serving after each refusal, and
// reach the apply guard itself at unit level.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ManualClock } from '../src/engine/clock.js';
import { World } from '../actors/world.js';
import { provisionAccount } from '../actors/internal-account.js';
import type { PaymentRecorded } from '../actors/payment-recorded.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertStatus, createCustomer } from './support/assertions.js';
import { accountIn, assertLedgerHolds, balanceOf, createQuote, execute, externalUsd, fund, getJson, quoteBody } from './support/money.js';

/** A CLABE (MXN bank account) whose last digits trigger no sandbox behaviour: payouts to it complete at once. */
const CLABE = '032180000118359719';

describe('balance checks against principal plus fees', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const svc = serviceForSuite({ clock });
  before(async () => {
    // A payment refused by the apply guard after its decision stops this process (exit 70,
    // the test file fails): the service's own line says which payment.
    process.once('exit', (code) => {
      if (code !== 0) for (const line of svc.reportLines) if (line.startsWith('fatal:')) process.stderr.write(`${line}\n`);
    });
  });

  /** The service still answers requests that write: it did not stop on the refused one. */
  async function stillServing(): Promise<void> {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    await fund(svc, usd.id, 1);
    assert.equal(await balanceOf(svc, usd.id), 1);
  }

  /** What a refused execute must leave: the balances, the quote PENDING without a transaction, no OUTGOING transaction. */
  async function nothingMoved(customerId: string, quoteId: string, balances: ReadonlyArray<readonly [string, number]>): Promise<void> {
    for (const [id, amount] of balances) assert.equal(await balanceOf(svc, id), amount, `${id} is unchanged`);
    const quote = await getJson(svc, `/quotes/${quoteId}`);
    assert.equal(quote.status, 'PENDING');
    assert.equal(quote.transactionId, undefined);
    assert.equal((await getJson(svc, `/transactions?customerId=${customerId}&type=OUTGOING`)).totalCount, 0);
    assertLedgerHolds(svc);
  }

  it('USD -> USDC: a balance that covers the principal but not the fees is 400 INSUFFICIENT_BALANCE; exactly the total pays', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const usdc = await accountIn(svc, customer.id, 'USDC');
    await fund(svc, usd.id, 100_000);
    const quote = await createQuote(svc, quoteBody(usd.id, usdc.id, 100_001));
    assert.equal(quote.totalSendingAmount, 100_001);
    assert.ok(quote.feesIncluded > 0, 'the conversion carries fees');
    const principal = quote.totalSendingAmount - quote.feesIncluded;
    assert.ok(principal < 100_000, `the balance covers the principal ${principal}, not the total`);

    const refused = await svc.request('POST', `/quotes/${quote.id}/execute`);
    const error = assertError(refused, 400, 'INSUFFICIENT_BALANCE', ['source.accountId']);
    assert.match(error.message, /100000 USD.*needs 100001/);
    await nothingMoved(customer.id, quote.id, [
      [usd.id, 100_000],
      [usdc.id, 0],
    ]);
    await stillServing();

    // One more cent makes the balance exactly principal + fees: the same quote pays, to 0.
    await fund(svc, usd.id, 1);
    const paid = await execute(svc, quote.id);
    assert.equal(paid.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.equal(await balanceOf(svc, usdc.id), quote.totalReceivingAmount);
    assertLedgerHolds(svc);
  });

  it('USD -> MXN payout with a fixed fee, receiving side locked, immediatelyExecute: one cent short is refused and nothing is made; the exact total pays', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const clabe = await svc.request('POST', '/customers/external-accounts', {
      body: { customerId: customer.id, currency: 'MXN', accountInfo: { accountType: 'CLABE', clabe: CLABE, beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' } } },
    });
    assertStatus(clabe, 201);
    const body = quoteBody(usd.id, clabe.body.id, 50_000, { lockedCurrencySide: 'RECEIVING' });
    // A quote that is not executed shows what the payment costs.
    const priced = await createQuote(svc, body);
    assert.equal(priced.totalReceivingAmount, 50_000);
    assert.ok(priced.rateDetails.serviceApiFixedFee > 0 && priced.feesIncluded > priced.rateDetails.serviceApiFixedFee, 'a fixed and a variable fee');
    const total = priced.totalSendingAmount;
    await fund(svc, usd.id, total - 1);

    const refused = await svc.request('POST', '/quotes', { body: { ...body, immediatelyExecute: true } });
    assertError(refused, 400, 'INSUFFICIENT_BALANCE', ['source.accountId']);
    assert.equal(await balanceOf(svc, usd.id), total - 1);
    assert.equal((await getJson(svc, `/transactions?customerId=${customer.id}&type=OUTGOING`)).totalCount, 0);
    assertLedgerHolds(svc);
    await stillServing();

    await fund(svc, usd.id, 1);
    const paid = await createQuote(svc, { ...body, immediatelyExecute: true });
    assert.equal(paid.status, 'COMPLETED');
    assert.equal(paid.totalSendingAmount, total);
    assert.equal(await balanceOf(svc, usd.id), 0);
    assert.equal((await getJson(svc, `/transactions/${paid.transactionId}`)).status, 'COMPLETED');
    assertLedgerHolds(svc);
  });

  it('USDC -> a USD bank account: a payout held in transit is refused one unit short of principal + fees', async () => {
    const customer = await createCustomer(svc);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    // Suffix 004: the payout is PROCESSING at once (debited into transit) and rejected later.
    const bank = await externalUsd(svc, customer.id, '004');
    const quote = await createQuote(svc, quoteBody(usdc.id, bank.id, 2_000_000));
    assert.ok(quote.feesIncluded > 0);
    await fund(svc, usdc.id, quote.totalSendingAmount - 1);
    assertError(await svc.request('POST', `/quotes/${quote.id}/execute`), 400, 'INSUFFICIENT_BALANCE', ['source.accountId']);
    await nothingMoved(customer.id, quote.id, [[usdc.id, quote.totalSendingAmount - 1]]);
    await fund(svc, usdc.id, 1);
    assert.equal((await execute(svc, quote.id)).status, 'PROCESSING');
    assert.equal(await balanceOf(svc, usdc.id), 0);
    assertLedgerHolds(svc);
  });

  it('property: around the total, an execute pays exactly when the balance covers principal + fees, and the service keeps serving', async () => {
    // Sending and receiving account kinds of one customer: converting pairs and a payout.
    const pairs = [
      ['USD', 'USDC'],
      ['USDC', 'USD'],
      ['USDB', 'USD'],
      ['USD', 'bank'],
      ['USDC', 'bank'],
    ] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...pairs),
        fc.constantFrom('SENDING' as const, 'RECEIVING' as const),
        // Large enough that a crypto amount (6 decimals) buys at least a cent.
        fc.integer({ min: 1_000_000, max: 5_000_000 }),
        // How far the balance is from the total: below it (refused) or at and above it (paid).
        fc.integer({ min: -3, max: 2 }),
        async ([from, to], side, amount, offset) => {
          const customer = await createCustomer(svc);
          const source = await accountIn(svc, customer.id, from);
          const destination = to === 'bank' ? await externalUsd(svc, customer.id, '123') : await accountIn(svc, customer.id, to);
          const quote = await createQuote(svc, quoteBody(source.id, destination.id, amount, { lockedCurrencySide: side }));
          const balance = quote.totalSendingAmount + offset;
          await fund(svc, source.id, balance);
          // An embedded wallet (USDB) executes on a stamp; the sandbox takes its literal.
          const headers: Record<string, string> = from === 'USDB' ? { 'Service-Wallet-Signature': 'sandbox-valid-signature' } : {};
          const res = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers });
          if (offset < 0) {
            assertError(res, 400, 'INSUFFICIENT_BALANCE', ['source.accountId']);
            assert.equal(await balanceOf(svc, source.id), balance);
          } else {
            assertStatus(res, 200);
            assert.equal(await balanceOf(svc, source.id), offset);
          }
          assertLedgerHolds(svc);
        },
      ),
      { numRuns: 30 },
    );
    await stillServing();
  });
});

describe('the apply guard of internal accounts', () => {
  const at = Date.UTC(2026, 0, 1);
  const envId = 'Platform:guard#sandbox';

  /** One movement of `balance` (and as much inflow when it is a credit) on one account. */
  function moved(accountId: string, balance: number): PaymentRecorded {
    return { type: 'payment.recorded', transactions: [], postings: [{ accountId, balance, inflow: Math.max(balance, 0), outflow: 0 }], ledger: [], webhooks: [] };
  }

  it('refuses a posting that would overdraw the account, leaving it as it was', () => {
    const world = new World();
    const account = provisionAccount(envId, '', 'USD', at);
    world.apply({ type: 'platform.accounts.created', accounts: [account] }, at);
    world.apply(moved(account.id, 100), at);
    assert.throws(() => world.apply(moved(account.id, -101), at + 1), { message: `balance of ${account.id} would become -1` });
    assert.equal(world.internalAccounts.get(account.id)!.balance, 100);
    // To exactly 0 is allowed.
    world.apply(moved(account.id, -100), at + 2);
    assert.equal(world.internalAccounts.get(account.id)!.balance, 0);
    assert.throws(() => world.apply(moved(account.id, -1), at + 3), { message: `balance of ${account.id} would become -1` });
  });

  it('refuses a balance past the largest safe integer', () => {
    const world = new World();
    const account = provisionAccount(envId, '', 'USDC', at);
    world.apply({ type: 'platform.accounts.created', accounts: [account] }, at);
    world.apply(moved(account.id, Number.MAX_SAFE_INTEGER), at);
    assert.throws(() => world.apply(moved(account.id, 1), at + 1), /would become/);
    assert.equal(world.internalAccounts.get(account.id)!.balance, Number.MAX_SAFE_INTEGER);
  });
});
