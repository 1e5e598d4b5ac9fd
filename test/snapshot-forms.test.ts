// The forms a snapshot stores a payment's records in (issue 38): its transactions without
// what they take from their quote (Transactions.stored), its webhook step with those
// transactions named by id and its accounts' versions by what changed in them
// (WebhookEvents.stored, step 2). What a platform reads after a
// restart from such a snapshot is what it read before; a change that would make a stored
// form wrong (a transaction's new version, a quote priced anew) notes the records that
// hold it changed, so the next snapshot writes them whole.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { accountVersionAt, storedAccountVersion, type InternalAccount } from '../actors/internal-account.js';
import type { Quote } from '../actors/quote.js';
import type { Transaction } from '../actors/transaction.js';
import { World } from '../actors/world.js';
import { startTestService, type TestService } from './support/service.js';
import { createQuote, execute, externalUsd, fundedCustomer, getJson, quoteBody } from './support/money.js';
import { ManualClock } from '../src/engine/clock.js';
import { assertStatus } from './support/assertions.js';

/**
 * How a payment's quote was executed: as it was made, so that its quote derives both its
 * transactions and no record of them is stored (derivedTransaction), or by a later request, whose
 * transactions are records stored from their quote.
 */
type Execution = 'at once' | 'later';

/** A service where one customer paid another `amounts`, each a quote executed `execution`; the last quote. */
async function paidBetweenTwo(svc: TestService, amounts: readonly number[], execution: Execution): Promise<Record<string, unknown>> {
  const alice = await fundedCustomer(svc, 100);
  const bob = await fundedCustomer(svc, 0);
  let quote: Record<string, unknown> = {};
  for (const amount of amounts) {
    if (execution === 'at once') quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, amount, { immediatelyExecute: true }));
    else quote = await execute(svc, (await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, amount))).id as string);
  }
  return quote;
}

describe("a payment's records in a snapshot", () => {
  it('are stored without what they take from elsewhere, and read back as they were', async () => {
    const first = await startTestService();
    let before: unknown[];
    let ids: string[];
    try {
      const alice = await fundedCustomer(first, 100);
      const bob = await fundedCustomer(first, 0);
      // Executed by a request of its own: an immediate execution's step is its quote's (webhook-steps).
      const quote = await execute(first, (await createQuote(first, quoteBody(alice.usd.id, bob.usd.id, 100, { description: 'rent' }))).id as string);
      const world = first.service.services.world;
      const outgoing = quote.transactionId as string;
      const incoming = `${outgoing.slice(0, -2)}02`;
      const step = `Webhook:${outgoing.slice('Transaction:'.length, -2)}`;
      for (const id of [outgoing, incoming]) {
        const stored = world.storedForm(id, world.transactions.get(id)) as { fromQuote?: string; sentAmount?: number };
        assert.equal(stored.fromQuote, quote.id, `${id} is stored from its quote`);
        assert.equal(stored.sentAmount, undefined, `${id} is stored without its quoted amounts`);
      }
      const storedStep = world.storedForm(step, world.webhookEvents.records.get(step)) as { step: number; reports: unknown[] };
      assert.equal(storedStep.step, 2);
      assert.deepEqual(storedStep.reports.slice(0, 2), [0, 2], "the step names its transactions by their ids' last bytes (the rest is its UUID)");
      const [paid, received] = [world.internalAccounts.get(alice.usd.id)!, world.internalAccounts.get(bob.usd.id)!];
      assert.deepEqual([paid.balance, received.balance], [0, 100]);
      assert.deepEqual(
        storedStep.reports.slice(2),
        [paid, received].map((a) => [a.id, a.balance, a.inflow, a.outflow, a.updatedAt]),
        'and its accounts by what changed in them',
      );
      ids = [`/quotes/${quote.id}`, `/transactions/${outgoing}`, `/transactions/${incoming}`, '/webhooks/events?limit=100'];
      before = [];
      for (const path of ids) before.push(await getJson(first, path));
      await first.service.services.engine.snapshot();
    } finally {
      await first.stop({ keepData: true });
    }
    const second = await startTestService({ dataDir: first.dataDir });
    try {
      const after = [];
      for (const path of ids) after.push(await getJson(second, path));
      assert.deepEqual(after, before);
      assert.deepEqual(second.service.services.world.checkInvariants(), []);
    } finally {
      await second.stop();
    }
  });

  it('leave out the ids and times their quote and their other fields give, and keep the rest, read back as they were', async () => {
    // A held clock: the payout stays PROCESSING, not settled, across the restart.
    const clock = new ManualClock(Date.UTC(2026, 6, 1));
    const first = await startTestService({ clock });
    let paths: string[];
    let before: unknown[];
    try {
      const world = first.service.services.world;
      const alice = await fundedCustomer(first, 1_000);
      const bob = await fundedCustomer(first, 0);
      // Customers with platform ids of their own: their transactions keep them.
      const carol = await fundedCustomer(first, 1_000, { platformCustomerId: 'carol-7' });
      const dave = await fundedCustomer(first, 0, { platformCustomerId: 'dave-9' });
      const plain = await createQuote(first, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }));
      const named = await createQuote(first, quoteBody(carol.usd.id, dave.usd.id, 200, { immediatelyExecute: true }));
      const confirmed = await createQuote(first, quoteBody(alice.usd.id, dave.usd.id, 300, { immediatelyExecute: true }));
      const pairOf = (quote: Record<string, unknown>): [string, string] => {
        const outgoing = quote.transactionId as string;
        return [outgoing, `${outgoing.slice(0, -2)}02`];
      };
      const storedOf = (id: string): Record<string, unknown> => world.storedForm(id, world.transactions.get(id)) as Record<string, unknown>;
      for (const id of pairOf(plain)) assert.deepEqual(Object.keys(storedOf(id)).sort(), ['createdAt', 'derived', 'fromQuote', 'id', 'status', 'type'], `${id} keeps only what nothing else gives`);
      const [carolPaid, daveGot] = pairOf(named).map(storedOf);
      assert.deepEqual([carolPaid!.platformCustomerId, daveGot!.platformCustomerId], ['carol-7', 'dave-9']);
      clock.advance(1_000);
      assertStatus(await first.request('POST', `/transactions/${pairOf(confirmed)[1]}/confirm`, { body: { receiptDeliveryConfirmedAt: '2026-01-02T03:04:05.000Z' } }), 200);
      const changed = storedOf(pairOf(confirmed)[1]);
      assert.equal(typeof changed.updatedAt, 'number', 'a transaction changed since it was made keeps its updatedAt');
      assert.equal(changed.settledAt, undefined, 'and its settledAt is its createdAt');
      // A quote's stored form leaves out its owner, payee, expiry and update time when its other fields say them.
      const quoteStored = (id: string): Record<string, unknown> => world.storedForm(id, world.quotes.get(id)) as Record<string, unknown>;
      assert.deepEqual(
        ['ownerId', 'payeeAccountId', 'expiresAt', 'updatedAt'].filter((field) => field in quoteStored(plain.id as string)),
        [],
        'a quote executed at once keeps none of them',
      );
      const later = await createQuote(first, quoteBody(alice.usd.id, bob.usd.id, 10));
      clock.advance(2_000);
      assertStatus(await first.request('POST', `/quotes/${later.id as string}/execute`), 200);
      assert.equal(typeof quoteStored(later.id as string).updatedAt, 'number', 'a quote executed later keeps its updatedAt');
      const bank = await externalUsd(first, alice.customer.id, '004');
      const payout = await createQuote(first, quoteBody(alice.usd.id, bank.id, 50, { immediatelyExecute: true, destination: { destinationType: 'ACCOUNT', accountId: bank.id, paymentRail: 'ACH' } }));
      const paidOut = storedOf(payout.transactionId as string);
      assert.equal(paidOut.fromQuote, payout.id);
      assert.deepEqual([paidOut.settledAt, (paidOut.derived as number) & 128], [undefined, 0], 'a payout in flight is not settled');
      paths = [plain, named, confirmed].flatMap((quote) => [`/quotes/${quote.id as string}`, ...pairOf(quote).map((id) => `/transactions/${id}`)]);
      paths.push(`/quotes/${payout.id as string}`, `/transactions/${payout.transactionId as string}`, `/quotes/${later.id as string}`);
      before = [];
      for (const path of paths) before.push(await getJson(first, path));
      await first.service.services.engine.snapshot();
    } finally {
      await first.stop({ keepData: true });
    }
    const second = await startTestService({ dataDir: first.dataDir, clock });
    try {
      const after = [];
      for (const path of paths) after.push(await getJson(second, path));
      assert.deepEqual(after, before);
      assert.deepEqual(second.service.services.world.checkInvariants(), []);
    } finally {
      await second.stop();
    }
  });

  for (const execution of ['later', 'at once'] as const) {
    it(`are read back whatever order the snapshot gives them in (executed ${execution})`, async () => {
      const svc = await startTestService();
      try {
        const last = await paidBetweenTwo(svc, [60, 40], execution);
        const world = svc.service.services.world;
        const { ids, records } = world.captureColumns();
        const stored = ids.map((id, i) => [id, world.storedForm(id, records[i])] as const);
        // The transactions and webhook steps first, their quotes last.
        const late = (id: string): boolean => id.startsWith('Quote:');
        const image = [...stored.filter(([id]) => !late(id)), ...stored.filter(([id]) => late(id))];
        const outgoing = last.transactionId as string;
        const paymentRecords = ids.filter((id) => id === outgoing || id === `${outgoing.slice(0, -2)}02`);
        if (execution === 'later') {
          assert.ok(stored.some(([, form]) => typeof form === 'object' && form !== null && 'fromQuote' in form), 'some transaction is stored from its quote');
          assert.equal(paymentRecords.length, 2);
        } else assert.deepEqual(paymentRecords, [], 'the quote derives its transactions: the snapshot holds no record of them');
        const copy = new World();
        copy.restore(image);
        assert.deepEqual(new Map(copy.capture()), new Map(world.capture()));
        assert.deepEqual(copy.checkInvariants(), []);
        const envId = world.quotes.get(last.id as string)!.envId;
        for (const customerId of [undefined, world.transactions.get(outgoing)!.customerId, world.transactions.get(`${outgoing.slice(0, -2)}02`)!.customerId]) {
          assert.deepEqual(copy.transactions.idsIn(envId, customerId), world.transactions.idsIn(envId, customerId), `${customerId ?? 'the environment'}'s transactions are listed as before`);
        }
        assert.ok(world.transactions.idsIn(envId).includes(outgoing));
      } finally {
        await svc.stop();
      }
    });
  }

  it('keep every field of a quote, left out or not', async () => {
    const svc = await startTestService();
    try {
      const paid = await paidBetweenTwo(svc, [100], 'at once');
      const world = svc.service.services.world;
      const quote = world.quotes.get(paid.id as string) as Quote;
      // Every optional field set, and each derivable one once as derived and once not.
      // Required: a field added to Quote must be named here, so the stored form's list of fields (storedQuote) is checked for it too.
      const full: Required<Quote> = {
        ...quote,
        payeeAccountId: quote.payeeAccountId!,
        transactionId: quote.transactionId!,
        transactionsDerived: 3,
        webhookStep: [1, 0, 0, 100, 100, 100, 0],
        fundingReference: 'UMAQUOTEREF',
        umaTestBehaviour: 'APPROVE' as NonNullable<Quote['umaTestBehaviour']>,
        lookupId: 'Lookup:0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee',
        description: 'rent',
        purposeOfPayment: 'GIFT' as NonNullable<Quote['purposeOfPayment']>,
        senderCustomerInfo: { FULL_NAME: 'Ada' },
        counterpartyInformation: { FULL_NAME: 'Bea' },
        payloadToSign: '{"quoteId":"x"}',
      };
      // Each derivable field alone not what the others say, the rest left out.
      const odd: Quote[] = [
        { ...full, ownerId: 'Customer:0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeee00' },
        { ...full, payeeAccountId: 'InternalAccount:0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeee01' },
        { ...full, expiresAt: quote.createdAt + 1 },
        { ...full, updatedAt: quote.createdAt + 2 },
        { ...full, sourceCustomerId: 'Customer:0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeee00' },
        { ...full, sourceCustomerId: '' },
        { ...full, transactionId: 'Transaction:0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeee00' },
      ];
      // A quote executed as it was made, from a customer's account, stores neither id: its source account and its own id give them.
      const stored = world.storedForm(quote.id, quote) as Partial<Quote>;
      assert.deepEqual([stored.sourceCustomerId, stored.transactionId], [undefined, undefined]);
      for (const record of [quote, full, ...odd]) {
        const copy = new World();
        copy.restore([[record.id, world.storedForm(record.id, record)]]);
        assert.deepEqual(copy.quotes.get(record.id), record);
      }
    } finally {
      await svc.stop();
    }
  });

  for (const execution of ['later', 'at once'] as const) {
    it(`are noted changed when their quote is priced anew, and then stored whole, as they were (executed ${execution})`, async () => {
      const svc = await startTestService();
      try {
        const paid = await paidBetweenTwo(svc, [100], execution);
        const world = svc.service.services.world;
        const outgoing = paid.transactionId as string;
        const incoming = `${outgoing.slice(0, -2)}02`;
        world.captureChanges();
        // No decision prices a quote anew; an entry of an older log could.
        const quote = world.quotes.get(paid.id as string) as Quote;
        const before = [outgoing, incoming].map((id) => world.transactions.get(id));
        world.apply({ type: 'quote.changed', quote: { ...quote, price: { ...quote.price, exchangeRate: 2 } } }, Date.now());
        const changed = world.captureChanges().noted;
        assert.ok(changed.includes(outgoing) && changed.includes(incoming), `changed: ${changed.join(', ')}`);
        for (const id of [outgoing, incoming]) {
          const tx = world.transactions.get(id) as Transaction;
          assert.equal(world.storedForm(id, tx), tx, `${id} is stored whole now`);
          assert.equal(tx.exchangeRate, quote.price.exchangeRate, `${id} keeps the rate it was paid at`);
        }
        assert.deepEqual([outgoing, incoming].map((id) => world.transactions.get(id)), before);
      } finally {
        await svc.stop();
      }
    });
  }
});

describe("an account's version stored as what changed in it", () => {
  const current: InternalAccount = {
    id: 'InternalAccount:019b76da-a800-7009-9c71-083df2776d01',
    envId: 'Platform:019b76da-a800-7009-9c71-083df2776d00#sandbox',
    customerId: 'Customer:019b76da-a800-7009-9c71-083df2776d00',
    type: 'INTERNAL_FIAT',
    currency: 'USD',
    balance: 500,
    inflow: 900,
    outflow: 400,
    createdAt: 1_000,
    updatedAt: 7_000,
    fundingReference: 'UMAAGPZPYXJAB2AXB6YW3PKYZTPAA',
  };

  it('reads back as it was, with or without its privacy, from its account as it is now', () => {
    const version: InternalAccount = { ...current, balance: 200, inflow: 300, outflow: 100, updatedAt: 5_000 };
    const plain = storedAccountVersion(version, current)!;
    assert.deepEqual(plain, [version.id, 200, 300, 100, 5_000]);
    assert.deepEqual(accountVersionAt(current, plain), version);
    const private_ = { ...version, privateEnabled: true };
    assert.deepEqual(accountVersionAt({ ...current, privateEnabled: false }, storedAccountVersion(private_, { ...current, privateEnabled: false })!), private_);
  });

  it('is stored whole when its account would give back anything else', () => {
    const version: InternalAccount = { ...current, balance: 200, updatedAt: 5_000 };
    const changed: Array<Partial<InternalAccount>> = [
      { id: `${current.id.slice(0, -2)}02` },
      { envId: 'Platform:019b76da-a800-7009-9c71-083df2776d00#production' },
      { customerId: '' },
      { type: 'EMBEDDED_WALLET' },
      { currency: 'EUR' },
      { fundingReference: undefined },
      { createdAt: 2_000 },
    ];
    for (const change of changed) assert.equal(storedAccountVersion(version, { ...current, ...change }), undefined, JSON.stringify(change));
    assert.equal(storedAccountVersion(version, undefined), undefined);
  });
});
