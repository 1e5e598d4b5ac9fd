// The ledger invariant of CONTRACT.md "Money" as a property: random sequences of fundings,
// quotes (executed at once or later, converted or not, from internal accounts or pulled
// from bank accounts, to internal accounts and to external accounts of every sandbox
// suffix), time passing (expiries, settlements, refunds, losses)
// and restarts keep, per environment and currency,
//   sum(balances) + in transit + fees = inflow - outflow
// with no negative balance; once every timer has fired nothing is left in transit.
//
// The seeds are fixed, so every run replays the same sequences and a bug they find is found
// every time (a random seed caught a fee-refund bug in 2 runs of 8). Together they must also
// reach every outcome in REQUIRED_OUTCOMES and MIN_COMPLETED completed payments: a service
// that refused every payment, or never refunded one, would otherwise keep the invariant
// trivially. LEDGER_PROPERTY_SEEDS=1,2,3 explores other seeds (their outcomes are reported,
// not required); a failure names its seed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService, type TestService } from './support/service.js';
import { accountIn, externalUsd, fund, fundedCustomer, quoteBody, until } from './support/money.js';

type Op =
  | { kind: 'fund'; account: number; amount: number }
  | { kind: 'pay'; from: number; to: number; amount: number; side: 'SENDING' | 'RECEIVING'; immediately: boolean }
  | { kind: 'executeLast' }
  | { kind: 'advance'; ms: number }
  | { kind: 'restart' };

const SUFFIXES = ['123', '002', '003', '004', '005', '006', '007'];

const fundOp = fc.record({ kind: fc.constant('fund' as const), account: fc.nat(5), amount: fc.integer({ min: 1, max: 1_000_000 }) });
const payOp = fc.record({
  kind: fc.constant('pay' as const),
  // Converting sources (USDC, whose payouts to USD carry fees) weigh double; 6-8 pull from a bank account.
  from: fc.constantFrom(0, 1, 1, 2, 3, 3, 4, 5, 6, 7, 8),
  // Half the payments go out to an external account (indexes 6 and up).
  to: fc.oneof(fc.nat(5), fc.integer({ min: 6, max: 5 + SUFFIXES.length })),
  amount: fc.integer({ min: 1, max: 400_000 }),
  side: fc.constantFrom('SENDING' as const, 'RECEIVING' as const),
  immediately: fc.boolean(),
});
const executeOp = fc.record({ kind: fc.constant('executeLast' as const) });
const advanceOp = fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(1_000, 5_000, 30_000, 5 * 60_000, 6 * 60_000) });
const restartOp = fc.record({ kind: fc.constant('restart' as const) });

/**
 * Each of these reaches both kinds of fee refund, and together they reach every required
 * outcome. A change to the generators changes what they reach; the coverage check then fails
 * and asks for new seeds rather than letting the property silently test less.
 */
const FIXED_SEEDS = [28, 29, 67];
const RUNS_PER_SEED = 5;
/** What the fixed seeds' runs must reach between them, as `note` names outcomes. */
const REQUIRED_OUTCOMES = [
  'quote refused INSUFFICIENT_BALANCE',
  'payment FAILED',
  'payment REJECTED',
  'payment REFUNDED',
  'fees refunded after a failed payout',
  'fees refunded after a returned payout',
];
/** Completed payments the fixed seeds must reach between them (they reach 26). */
const MIN_COMPLETED = 20;

function seedsToRun(): { seeds: number[]; explored: boolean } {
  const given = process.env.LEDGER_PROPERTY_SEEDS;
  if (given === undefined || given === '') return { seeds: FIXED_SEEDS, explored: false };
  const seeds = given.split(',').map((s) => Number(s.trim()));
  if (!seeds.every(Number.isSafeInteger)) throw new Error(`LEDGER_PROPERTY_SEEDS must be integers separated by commas, got ${given}`);
  return { seeds, explored: true };
}

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fundOp, weight: 1 },
  { arbitrary: payOp, weight: 4 },
  { arbitrary: executeOp, weight: 1 },
  { arbitrary: advanceOp, weight: 2 },
  { arbitrary: restartOp, weight: 1 },
);

/** Every outgoing transaction of the sandbox environment, as the API lists them. */
async function outgoingTransactions(svc: TestService): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | undefined;
  do {
    const res = await svc.request('GET', `/transactions?type=OUTGOING&limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    assert.equal(res.status, 200, res.text);
    all.push(...res.body.data);
    cursor = res.body.hasMore ? res.body.nextCursor : undefined;
  } while (cursor !== undefined);
  return all;
}

function describeOutcomes(counts: Map<string, number>): string {
  return JSON.stringify(Object.fromEntries([...counts].sort()));
}

/**
 * One sequence of operations on a fresh service: the invariant holds after every step, and
 * once every timer has fired nothing is left in transit. `note` counts the outcomes reached.
 */
async function playOut(ops: Op[], note: (outcome: string) => void): Promise<void> {
  let clock = new ManualClock(Date.UTC(2026, 6, 1));
  let svc: TestService = await startTestService({ clock });
  try {
    // Internal accounts 0-5: two customers' USD and USDC, the platform's USD, an embedded wallet (USDB).
    const a = await fundedCustomer(svc, 0);
    const b = await fundedCustomer(svc, 0);
    const internal = [a.usd.id, (await accountIn(svc, a.customer.id, 'USDC')).id, b.usd.id, (await accountIn(svc, b.customer.id, 'USDC')).id];
    const platform = await svc.request('GET', '/platform/internal-accounts?currency=USD');
    internal.push(platform.body.data[0].id, (await accountIn(svc, b.customer.id, 'USDB')).id);
    // Funded up front, so that most payments go through and every outcome row is reached.
    for (const id of internal.slice(0, 5)) await fund(svc, id, 2_000_000);
    const external: string[] = [];
    for (const suffix of SUFFIXES) external.push((await externalUsd(svc, a.customer.id, suffix)).id);
    const destinations = [...internal, ...external];
    // Direct pulls from a customer's bank accounts: one that pays, one the bank rejects (004), one that fails (005).
    const sources = [...internal, external[0]!, external[3]!, external[4]!];
    let lastQuote: string | undefined;

    const check = (): void => assert.deepEqual(svc.service.services.world.checkInvariants(), [], JSON.stringify(ops));
    /** Every timer that is due has played out. */
    const caughtUp = (): boolean => {
      const world = svc.service.services.world;
      const now = clock.now();
      for (const tx of world.transactions.records.values()) if (tx.pending !== undefined && tx.pending.due <= now) return false;
      for (const q of world.quotes.records.values()) if (q.status === 'PENDING' && q.expiresAt <= now) return false;
      return true;
    };

    for (const step of ops) {
      switch (step.kind) {
        case 'fund':
          await fund(svc, internal[step.account]!, step.amount);
          break;
        case 'pay': {
          const to = destinations[step.to]!;
          if (to === sources[step.from]) break;
          const res = await svc.request('POST', '/quotes', {
            body: quoteBody(sources[step.from]!, to, step.amount, { lockedCurrencySide: step.side, immediatelyExecute: step.immediately }),
          });
          // Refusals (balance, bounds, an amount too small to price) are fine, and nothing may move; the
          // outcomes counted here must include enough payments that went through (MIN_COMPLETED).
          assert.ok([201, 400].includes(res.status), res.text);
          note(res.status === 201 ? 'quote created' : `quote refused ${res.body.code}`);
          if (res.status === 201 && !step.immediately) lastQuote = res.body.id;
          break;
        }
        case 'executeLast':
          if (lastQuote !== undefined) {
            const res = await svc.request('POST', `/quotes/${lastQuote}/execute`);
            // Insufficient balance or expired (400), executed already (409), or a wallet's unsigned execute (401).
            assert.ok([200, 400, 401, 409].includes(res.status), res.text);
            note(res.status === 200 ? 'execute 200' : `execute ${res.status} ${res.body.code}`);
          }
          break;
        case 'advance':
          clock.advance(step.ms);
          await until(svc, caughtUp);
          break;
        case 'restart': {
          const dataDir = svc.dataDir;
          const now = clock.now();
          await svc.stop({ keepData: true });
          clock = new ManualClock(now);
          svc = await startTestService({ clock, dataDir });
          break;
        }
      }
      check();
    }
    clock.advance(10 * 60_000);
    await until(svc, caughtUp);
    check();
    for (const totals of svc.service.services.world.ledger.all()) assert.equal(totals.inTransit, 0, `${totals.id} still has money in transit`);
    // How each payment ended, as its sender sees it once every outcome has played out.
    for (const tx of await outgoingTransactions(svc)) {
      note(`payment ${tx.status}`);
      // A refund returns the fees too, which only a payment that carried some tests; a payout
      // the bank returned after it settled (005) is refunded by another path than one that failed.
      const fees = tx.rateDetails.serviceApiFixedFee + tx.rateDetails.serviceApiVariableFeeAmount;
      if (tx.status === 'REFUNDED' && fees > 0) note(tx.settledAt === undefined ? 'fees refunded after a failed payout' : 'fees refunded after a returned payout');
    }
  } finally {
    await svc.stop();
  }
}

describe('ledger invariant under random money movements', () => {
  it('holds after every step, across restarts, and nothing stays in transit', async (t) => {
    const { seeds, explored } = seedsToRun();
    /** How often each outcome was reached, over every seed's runs. */
    const reached = new Map<string, number>();
    for (const seed of seeds) {
      const ofSeed = new Map<string, number>();
      const note = (outcome: string): void => void ofSeed.set(outcome, (ofSeed.get(outcome) ?? 0) + 1);
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), (ops) => playOut(ops, note)),
          { seed, numRuns: RUNS_PER_SEED, includeErrorInReport: true },
        );
      } catch (err) {
        // The reporter shows the message only, so it carries fast-check's (counterexample, path).
        const why = err instanceof Error ? err.message : String(err);
        throw new Error(`the ledger property failed with seed ${seed} (replay it alone with LEDGER_PROPERTY_SEEDS=${seed}): ${why}`, { cause: err });
      }
      t.diagnostic(`seed ${seed} reached ${describeOutcomes(ofSeed)}`);
      for (const [outcome, n] of ofSeed) reached.set(outcome, (reached.get(outcome) ?? 0) + n);
    }
    if (explored) return;
    const missing = REQUIRED_OUTCOMES.filter((outcome) => !reached.has(outcome));
    assert.deepEqual(missing, [], `seeds ${seeds.join(', ')} never reached ${missing.join(', ')} (reached ${describeOutcomes(reached)})`);
    const completed = reached.get('payment COMPLETED') ?? 0;
    assert.ok(completed >= MIN_COMPLETED, `seeds ${seeds.join(', ')} completed ${completed} payments, fewer than ${MIN_COMPLETED} (reached ${describeOutcomes(reached)})`);
  });
});
