// A quote executed as it is made derives the transactions of its payment (issue 38): they
// share its UUID, no record of them is stored while they are what the quote says, and a
// platform reads them exactly as it would read stored ones, before and after a restart.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { derivedTransaction, derivesFromQuote, paymentReference, type Transaction } from '../actors/transaction.js';
import { startTestService, type TestService } from './support/service.js';
import { createQuote, execute, fundedCustomer, getJson, quoteBody } from './support/money.js';

/** What a platform reads of a payment: its quote, its transactions and each party's listing. */
async function readPayments(svc: TestService, quotes: readonly any[], customers: readonly string[]): Promise<unknown[]> {
  const read: unknown[] = [];
  for (const quote of quotes) {
    read.push(await getJson(svc, `/quotes/${quote.id}`));
    for (const id of [quote.transactionId, `${quote.transactionId.slice(0, -2)}02`]) read.push((await svc.request('GET', `/transactions/${id}`)).body);
  }
  for (const customerId of customers) read.push(await getJson(svc, `/transactions?customerId=${customerId}&limit=100`));
  return read;
}

describe('the transactions of a quote executed as it is made', () => {
  it('are derived from the quote, stored nowhere, and read the same after a restart and after a snapshot', async () => {
    let svc = await startTestService();
    const { dataDir } = svc;
    try {
      const alice = await fundedCustomer(svc, 1_000, { platformCustomerId: 'alice-1' });
      const bob = await fundedCustomer(svc, 0);
      const carol = await fundedCustomer(svc, 0, { platformCustomerId: 'carol-7' });
      const plain = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true, description: 'rent' }));
      // The receiver's platform id is its own, its customer's: derived too. The sender's details are the receiver's counterparty: stored.
      const named = await createQuote(svc, quoteBody(alice.usd.id, carol.usd.id, 200, { immediatelyExecute: true, senderCustomerInfo: { FULL_NAME: 'Alice Ames' } }));
      const later = await execute(svc, (await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 300))).id);
      const quotes = [plain, named, later];
      assert.equal(plain.transactionId, `Transaction:${plain.id.slice('Quote:'.length)}`, 'the quote and its payment share one UUID');
      assert.notEqual(later.transactionId.slice(-36), later.id.slice(-36), 'a later execution draws its own');
      const stored = (id: string): boolean => svc.service.services.world.transactions.records.has(id);
      const received = (quote: any): string => `${quote.transactionId.slice(0, -2)}02`;
      assert.deepEqual(
        [plain.transactionId, received(plain), named.transactionId, received(named), later.transactionId].map(stored),
        [false, false, false, true, true],
        'derived: both of the plain payment, the outgoing one of the named payment',
      );
      const customers = [alice.customer.id, bob.customer.id, carol.customer.id];
      const before = await readPayments(svc, quotes, customers);
      assert.equal((before[1] as Transaction).status, 'COMPLETED');
      assert.equal((before.at(-3) as { data: unknown[] }).data.length, 4, "alice's funding and her three payments");
      for (const snapshot of [false, true]) {
        if (snapshot) await svc.service.services.engine.snapshot();
        await svc.stop({ keepData: true });
        svc = await startTestService({ dataDir });
        assert.deepEqual(await readPayments(svc, quotes, customers), before, snapshot ? 'from a snapshot' : 'from the log');
        assert.deepEqual(svc.service.services.world.checkInvariants(), []);
      }
    } finally {
      await svc.stop();
    }
  });

  it('are derived only when the quote gives back every field they hold', async () => {
    const svc = await startTestService();
    try {
      const alice = await fundedCustomer(svc, 1_000, { platformCustomerId: 'alice-1' });
      const bob = await fundedCustomer(svc, 0);
      const later = await execute(svc, (await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100))).id);
      const world = svc.service.services.world;
      const quote = world.quotes.get(later.id)!;
      const outgoing = quote.transactionId!;
      const reference = paymentReference(outgoing);
      const platformIds = (id: string): string | undefined => world.customers.platformCustomerIdOf(id);
      const pair = [outgoing, `${outgoing.slice(0, -2)}02`].map((id) => world.transactions.get(id)!);
      for (const tx of pair) {
        assert.ok(derivesFromQuote(tx, quote, outgoing, reference, platformIds), `${tx.id} is what its quote says`);
        assert.deepEqual(derivedTransaction(quote, tx.id, platformIds), tx);
      }
      // One field changed to another value of its type (or left out, when optional): derived only if the quote still gives back the whole transaction.
      const [out, into] = pair as [Transaction, Transaction];
      const optional = new Set<string>(['description', 'counterpartyInformation', 'failureReason', 'pending', 'settledAt', 'receiptDeliveryConfirmedAt']);
      const values = fc.oneof(
        fc.string({ maxLength: 3 }),
        fc.integer({ min: out.createdAt - 1, max: out.createdAt + 1 }),
        fc.constantFrom<unknown>(undefined, 'COMPLETED', 'PENDING', 'INCOMING', 'OUTGOING', '', ...Object.values(out), ...Object.values(into)),
        fc.constantFrom<unknown>({ ...out.rateDetails, serviceApiFixedFee: 1 }, { ...out.source }, { FULL_NAME: 'Ada' }, { outcome: 'SETTLE', due: out.createdAt }),
      );
      const fields = [...new Set([...Object.keys(out), ...optional])] as Array<keyof Transaction>;
      // Or its times, together, other than its id's.
      fc.assert(
        fc.property(fc.constantFrom(out, into), fc.integer({ min: -2, max: 2 }), (tx, shift) => {
          const changed = { ...tx, createdAt: tx.createdAt + shift, updatedAt: tx.updatedAt + shift, settledAt: tx.settledAt! + shift };
          assert.equal(derivesFromQuote(changed, quote, outgoing, reference, platformIds), shift === 0);
        }),
      );
      fc.assert(
        fc.property(fc.constantFrom(out, into), fc.constantFrom(...fields), values, (tx, field, v) => {
          fc.pre(v === undefined ? optional.has(field) : tx[field] === undefined || typeof v === typeof tx[field]);
          const changed = { ...tx, [field]: v } as Transaction;
          if (v === undefined) delete (changed as Partial<Transaction>)[field];
          if (derivesFromQuote(changed, quote, outgoing, reference, platformIds)) assert.deepEqual(derivedTransaction(quote, changed.id, platformIds), changed);
        }),
        { numRuns: 2_000 },
      );
    } finally {
      await svc.stop();
    }
  });
});
