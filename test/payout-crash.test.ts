// A crash with payouts in flight: the service (a child process) executes payouts of every
// sandbox outcome and holds a pending quote, then is killed with SIGKILL. Reopened on the
// same data directory with a manual clock, its durable timers fire: every payout reaches
// the final state of CONTRACT.md's table, so do transfers in flight, the quotes (one a
// REALTIME_FUNDING quote) expire, and the ledger invariant holds.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService } from './support/service.js';
import { killAll, sandboxCaller, spawnService } from './support/service-process.js';
import { assertLedgerHolds, balanceOf, getJson, until, webhooksOf } from './support/money.js';

const FUNDS = 1_000_000;
const AMOUNT = 10_000;
/** suffix -> final transaction status, and whether the money stays out of the account */
const OUTCOMES: ReadonlyArray<[string, string, boolean]> = [
  ['123', 'COMPLETED', true],
  ['003', 'COMPLETED', true],
  ['004', 'REFUNDED', false],
  ['005', 'REFUNDED', false],
  ['006', 'REFUNDED', false],
  ['007', 'FAILED', true],
];

describe('payouts in flight across SIGKILL', () => {
  it('reach their final states after a restart, with the ledger invariant intact', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-payout-crash-'));
    const txIds = new Map<string, string>();
    let usdId = '';
    let pendingQuote = '';
    let fundingQuote = '';
    /** transaction id -> final status of the transfers left in flight (none moves money in the end) */
    const transfers = new Map<string, string>();
    try {
      const child = await spawnService(dataDir);
      const call = sandboxCaller(child);
      const customer = await call('POST', '/customers', { customerType: 'INDIVIDUAL' });
      const bob = await call('POST', '/customers', { customerType: 'INDIVIDUAL' });
      const usdOf = async (id: string) => (await call('GET', `/customers/internal-accounts?customerId=${id}&currency=USD`)).data[0].id as string;
      usdId = await usdOf(customer.id);
      await call('POST', `/sandbox/internal-accounts/${usdId}/fund`, { amount: FUNDS });
      for (const [suffix] of OUTCOMES) {
        const external = await call('POST', '/customers/external-accounts', {
          customerId: customer.id,
          currency: 'USD',
          accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: `555000${suffix}`, routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' } },
        });
        const quote = await call('POST', '/quotes', {
          source: { sourceType: 'ACCOUNT', accountId: usdId },
          destination: { destinationType: 'ACCOUNT', accountId: external.id },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: AMOUNT,
          immediatelyExecute: true,
        });
        txIds.set(suffix, quote.transactionId);
        if (suffix === '004' || suffix === '005') {
          const out = await call('POST', '/transfer-out', { source: { accountId: usdId }, destination: { accountId: external.id }, amount: AMOUNT });
          transfers.set(out.id, 'REFUNDED');
          const incoming = await call('POST', '/transfer-in', { source: { accountId: external.id }, destination: { accountId: usdId }, amount: AMOUNT });
          transfers.set(incoming.id, suffix === '004' ? 'REJECTED' : 'FAILED');
        }
      }
      fundingQuote = (
        await call('POST', '/quotes', {
          source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: customer.id },
          destination: { destinationType: 'ACCOUNT', accountId: usdId },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: AMOUNT,
        })
      ).id;
      pendingQuote = (
        await call('POST', '/quotes', {
          source: { sourceType: 'ACCOUNT', accountId: usdId },
          destination: { destinationType: 'ACCOUNT', accountId: await usdOf(bob.id) },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: 1,
        })
      ).id;
      child.proc.kill('SIGKILL');
      await child.exited;
    } finally {
      await killAll();
    }

    const clock = new ManualClock(Date.now());
    const svc = await startTestService({ clock, dataDir });
    try {
      assertLedgerHolds(svc);
      clock.advance(7 * 60_000);
      const world = svc.service.services.world;
      const inFlight = [...txIds.values(), ...transfers.keys()];
      await until(
        svc,
        () =>
          inFlight.every((id) => world.transactions.get(id)?.pending === undefined) &&
          world.quotes.get(pendingQuote)?.status === 'EXPIRED' &&
          world.quotes.get(fundingQuote)?.status === 'EXPIRED',
      );
      let kept = FUNDS;
      for (const [suffix, status, gone] of OUTCOMES) {
        const tx = await getJson(svc, `/transactions/${txIds.get(suffix)}`);
        assert.equal(tx.status, status, `suffix ${suffix}`);
        assert.equal(webhooksOf(svc, tx.id).at(-1)?.[1], status, `suffix ${suffix}: the last webhook event reports the final status`);
        if (gone) kept -= AMOUNT;
      }
      for (const [id, status] of transfers) assert.equal((await getJson(svc, `/transactions/${id}`)).status, status, `transfer ${id}`);
      assert.equal(await balanceOf(svc, usdId), kept);
      for (const totals of world.ledger.all()) assert.equal(totals.inTransit, 0);
      assertLedgerHolds(svc);
    } finally {
      await svc.stop();
    }
  });
});
