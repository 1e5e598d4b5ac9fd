// Moving a webhook queue through time: each try is real I/O against a loopback receiver,
// so before asserting that nothing was sent (or what was), a test lets every try in
// flight reach the receiver and its outcome reach the log.
import type { ManualClock } from '../../src/engine/clock.js';
import { getJson, until } from './money.js';
import type { TestService } from './service.js';

/** Waits until no try is in flight (each try is real I/O against the receiver) and the log has caught up. */
export async function quiet(svc: TestService): Promise<void> {
  await until(svc, () => svc.service.services.webhooks.stats().inFlight === 0, 'the tries in flight');
}

/** Moves the clock `ms` forward, stopping at each time the environment's queue is due, so every try on the way happens on time. */
export async function pass(svc: TestService, clock: ManualClock, envId: string, ms: number): Promise<void> {
  const target = clock.now() + ms;
  while (clock.now() < target) {
    // A try under way sets the next due time when it ends.
    await quiet(svc);
    const next = svc.service.services.webhooks.endpointState(envId).nextAttemptAt;
    const due = next === undefined ? target : Math.min(target, Date.parse(next));
    clock.advance(due - clock.now());
    await quiet(svc);
  }
}

/** Moves the clock and waits for what fell due (deliveries, the retention sweep) to be logged. */
export async function advance(svc: TestService, clock: ManualClock, ms: number): Promise<void> {
  clock.advance(ms);
  await quiet(svc);
  await svc.service.services.engine.settled();
  // The sweep's decision runs a turn after the clock callback.
  await new Promise((resolve) => setImmediate(resolve));
  await quiet(svc);
}

/** Every event the API lists (one page of up to 100, oldest first), and each as GET /webhooks/events/{id} answers it. */
export async function shownEvents(svc: TestService): Promise<{ listed: any[]; read: any[] }> {
  const listed = (await getJson(svc, '/webhooks/events?limit=100')).data.reverse();
  const read = [];
  for (const event of listed) read.push(await getJson(svc, `/webhooks/events/${event.id}`));
  return { listed, read };
}
