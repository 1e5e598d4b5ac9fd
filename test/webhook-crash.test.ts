// Webhook delivery across SIGKILL: the service (a child process) records events for an
// endpoint that keeps failing, so the oldest event has retries scheduled and the others
// wait behind it; it is killed with SIGKILL. Reopened on the same data directory (with a
// manual clock), the outbox resumes from its log: every event is delivered, the attempts
// made before the crash are kept, and the endpoint saw the events in creation order, a
// repeat only of the same event id (at least once).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService } from './support/service.js';
import { killAll, sandboxCaller, spawnService } from './support/service-process.js';
import { until } from './support/money.js';
import { quiesce } from './support/quiesce.js';
import { startReceiver } from './support/webhook-receiver.js';

const TRANSFERS = 3;

describe('webhook delivery across SIGKILL', () => {
  it('resumes after a restart: every event delivered, in creation order, attempts kept', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-webhook-crash-'));
    const receiver = await startReceiver(() => 500);
    try {
      const child = await spawnService(dataDir);
      try {
        const call = sandboxCaller(child);
        await call('PATCH', '/config', { webhookEndpoint: receiver.url });
        const usdOf = async (id: string) => (await call('GET', `/customers/internal-accounts?customerId=${id}&currency=USD`)).data[0].id as string;
        for (let i = 0; i < TRANSFERS; i++) {
          const from = await usdOf((await call('POST', '/customers', { customerType: 'INDIVIDUAL' })).id);
          const to = await usdOf((await call('POST', '/customers', { customerType: 'INDIVIDUAL' })).id);
          await call('POST', `/sandbox/internal-accounts/${from}/fund`, { amount: 100 });
          await call('POST', '/quotes', {
            source: { sourceType: 'ACCOUNT', accountId: from },
            destination: { destinationType: 'ACCOUNT', accountId: to },
            lockedCurrencySide: 'SENDING',
            lockedCurrencyAmount: 100,
            immediatelyExecute: true,
          });
        }
        // The first event failed twice (a retry 2 s out is scheduled); the rest wait behind it.
        await receiver.waitFor(2);
        child.proc.kill('SIGKILL');
        await child.exited;
      } finally {
        await killAll();
      }
      const beforeCrash = receiver.received.length;
      receiver.answer = () => 200;

      const clock = new ManualClock(Date.now());
      const svc = await startTestService({ clock, dataDir });
      try {
        const world = svc.service.services.world;
        const envId = [...world.envs.records.keys()].find((id) => id.endsWith('#sandbox'))!;
        const ids = [...world.webhookEvents.idsIn(envId)];
        assert.equal(ids.length, 6 * TRANSFERS, 'per transfer: the funding and its balance, the two payments, the two balances');
        const first = world.webhookEvents.get(ids[0]!)!;
        assert.ok(first.attempts.length >= 1 && first.attempts.every((a) => a.statusCode === 500), 'attempts before the crash are in the log');
        assert.ok(ids.every((id) => world.webhookEvents.get(id)!.deliveryStatus === 'PENDING'));
        clock.advance(60_000);
        await receiver.waitFor(beforeCrash + ids.length);
        await until(svc, () => ids.every((id) => world.webhookEvents.get(id)!.deliveryStatus === 'DELIVERED'));
        const seen = receiver.received.map((r) => r.json.id as string);
        const deduped = seen.filter((id, i) => i === 0 || seen[i - 1] !== id);
        assert.deepEqual(deduped, ids, 'creation order; repeats only of the same event, back to back');
        assert.equal(receiver.received.length - beforeCrash, ids.length, 'after the restart each event went once');
      } finally {
        await svc.stop({ keepData: true });
      }
      // The 2xx outcomes are in the log: opened once more, every event is DELIVERED and none goes again.
      const delivered = receiver.received.length;
      const reopened = await startTestService({ clock, dataDir });
      try {
        const world = reopened.service.services.world;
        const envId = [...world.envs.records.keys()].find((id) => id.endsWith('#sandbox'))!;
        const ids = [...world.webhookEvents.idsIn(envId)];
        assert.deepEqual(ids.filter((id) => world.webhookEvents.get(id)!.deliveryStatus !== 'DELIVERED'), [], 'every event still DELIVERED');
        clock.advance(24 * 3_600_000);
        await quiesce(reopened.service.services.engine);
        assert.equal(receiver.received.length, delivered, 'nothing is sent a second time');
      } finally {
        await reopened.stop();
      }
    } finally {
      await receiver.close();
    }
  });
});
