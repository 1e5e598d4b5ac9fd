// Moving a webhook queue through time: each try is real I/O against a loopback receiver,
// so before asserting that nothing was sent (or what was), a test lets every try in
// flight reach the receiver and its outcome reach the log.
import type { ManualClock } from '../../src/engine/clock.js';
import { until } from './money.js';
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
