// The ledger invariant of CONTRACT.md "Money" as a property: random sequences of fundings,
// quotes (executed at once or later, converted or not, from internal accounts or pulled
// from bank accounts, to internal accounts and to external accounts of every sandbox
// suffix), time passing (expiries, settlements, refunds, losses)
// and restarts keep, per environment and currency,
//   sum(balances) + in transit + fees = inflow - outflow
// with no negative balance; once every timer has fired nothing is left in transit.
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

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fundOp, weight: 1 },
  { arbitrary: payOp, weight: 4 },
  { arbitrary: executeOp, weight: 1 },
  { arbitrary: advanceOp, weight: 2 },
  { arbitrary: restartOp, weight: 1 },
);

describe('ledger invariant under random money movements', () => {
  it('holds after every step, across restarts, and nothing stays in transit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), async (ops) => {
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
                // Refusals (balance, bounds, an amount too small to price) are fine; nothing may move.
                assert.ok([201, 400].includes(res.status), res.text);
                if (res.status === 201 && !step.immediately) lastQuote = res.body.id;
                break;
              }
              case 'executeLast':
                if (lastQuote !== undefined) {
                  const res = await svc.request('POST', `/quotes/${lastQuote}/execute`);
                  // Insufficient balance or expired (400), executed already (409), or a wallet's unsigned execute (401).
                  assert.ok([200, 400, 401, 409].includes(res.status), res.text);
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
        } finally {
          await svc.stop();
        }
      }),
      { numRuns: 15, includeErrorInReport: true },
    );
  });
});
