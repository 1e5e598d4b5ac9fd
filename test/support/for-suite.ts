// One thing a test file or describe block shares across its tests (the service, a browser,
// a webhook receiver): started in a before hook, stopped in an after hook.
import { after, before } from 'node:test';

/**
 * Registers the hooks that start `what` before the suite's tests and stop it after them
 * (not when it never started), and returns what reads it. Hooks run in the order they are
 * registered, after hooks too: a thing registered first starts first and stops first. The
 * read belongs in hooks and tests; while the suite is being declared it throws.
 */
export function forSuite<T>(what: string, start: () => Promise<T>, stop: (started: T) => Promise<void>): () => T {
  let started: { value: T } | undefined;
  before(async () => {
    started = { value: await start() };
  });
  after(async () => {
    if (started !== undefined) await stop(started.value);
  });
  return () => {
    if (started === undefined) throw new Error(`${what} is not started yet (it starts in the suite's before hook: use it inside hooks and tests)`);
    return started.value;
  };
}

/**
 * An object that stands for the suite's started thing while the suite is declared: every
 * property read and write goes to what `started` returns at that moment. For the support
 * modules' plain objects (a TestService, a Receiver), whose methods are closures that need
 * no `this`; not for class instances.
 */
export function delegatingTo<T extends object>(started: () => T): T {
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(started(), key),
    set: (_, key, value) => Reflect.set(started(), key, value),
  });
}
