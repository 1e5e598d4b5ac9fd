// The engine contract as an assertion: a decision reads and writes only the records of the
// actors it holds (or records it creates). Commands from actors/commands run on the real
// domain; a command that names too few actors fails here instead of racing in production.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { World, type DomainCommand, type DomainEvent, type TimerMessage } from '../actors/world.js';
import type { PlatformEnv } from '../actors/platform.js';
import { createCustomer, deleteCustomer } from '../actors/commands/customers.js';
import type { Customer } from '../actors/customer.js';
import { ManualClock } from '../src/engine/clock.js';
import { COMMAND_TRIES, ContendedError, Engine } from '../src/engine/engine.js';
import { ActorNotHeldError, FactsOutdatedError } from '../src/engine/state-machine.js';
import { errorAnswer } from '../src/http/server.js';
import { errorBody } from '../src/http/errors.js';
import { tempDir } from './support/counter-machine.js';
import { sandboxEnv } from './support/sandbox-env.js';

interface Opened {
  engine: Engine<DomainEvent, TimerMessage, World>;
  world: World;
  env: PlatformEnv;
  fatal: string[];
}

/** Runs `use` on an engine over a World with one sandbox environment; closes and removes it after. */
async function withOpenWorld(use: (opened: Opened) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const world = new World();
  const fatal: string[] = [];
  const engine = new Engine<DomainEvent, TimerMessage, World>({
    dataDir: dir,
    clock,
    machine: world,
    snapshotEveryEntries: 1_000_000,
    snapshotEveryMs: 3_600_000,
    report: () => undefined,
    onFatal: (what) => fatal.push(what),
  });
  await engine.open();
  try {
    const env = sandboxEnv(clock.now());
    await engine.exec([env.id], () => ({ events: [{ type: 'platform.env.created', env }], reply: () => undefined }));
    await use({ engine, world, env, fatal });
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const asIs = <R>(result: R): R => result;

async function newCustomer(opened: Opened): Promise<Customer> {
  return opened.engine.run(createCustomer, { envId: opened.env.id, customer: { customerType: 'INDIVIDUAL' } }, asIs);
}

describe('the holding check', () => {
  it('runs a command that names its actors; the same command naming too few is refused and changes nothing', () =>
    withOpenWorld(async (opened) => {
      const customer = await newCustomer(opened);
      // deleteCustomer as if its author forgot the customer: it holds only the environment.
      const forgetful: typeof deleteCustomer = { ...deleteCustomer, name: 'customer.delete (too few actors)', actors: ({ envId }) => [envId] };
      await assert.rejects(opened.engine.run(forgetful, { envId: opened.env.id, customerId: customer.id }, asIs), (err: unknown) => {
        assert.ok(err instanceof ActorNotHeldError);
        assert.equal(err.recordId, customer.id);
        assert.equal(err.actorId, customer.id);
        return true;
      });
      assert.equal(opened.world.customers.get(customer.id)!.isDeleted, false);
      const deleted = await opened.engine.run(deleteCustomer, { envId: opened.env.id, customerId: customer.id }, asIs);
      assert.equal(deleted.isDeleted, true);
      assert.deepEqual(opened.fatal, []);
    }));

  it('checks writes while the events apply: a decision that reads nothing but writes an unheld record stops the engine', () =>
    withOpenWorld(async (opened) => {
      const customer = await newCustomer(opened);
      const blind: DomainCommand<string, undefined> = {
        name: 'blind write',
        actors: () => [opened.env.id],
        decide: (id, _world, at) => ({ events: [{ type: 'customer.updated', customer: { ...customer, id, isDeleted: true, updatedAt: at }, accounts: [] }], reply: () => undefined }),
      };
      // The engine stops (a test records it instead of exiting): memory is ahead of the log.
      await assert.rejects(opened.engine.run(blind, customer.id, asIs));
      assert.deepEqual(opened.fatal, ['a decision failed after it was applied']);
    }));

  it('lets a decision use records it creates, which no other actor can know of yet', () =>
    withOpenWorld(async (opened) => {
      // createCustomer holds only the environment; its reply reads the new customer and its accounts.
      const customer = await newCustomer(opened);
      assert.ok(opened.world.internalAccounts.idsOwnedBy(customer.id).length > 0);
    }));

  it('refuses a command whose facts each of its tries finds outdated as contended, after COMMAND_TRIES prepares', () =>
    withOpenWorld(async (opened) => {
      let prepared = 0;
      let named = 0;
      const contended: DomainCommand<undefined, number, number> = {
        name: 'contended',
        prepare: async () => ++prepared,
        actors: () => (named++, ['a', 'b']),
        decide: () => {
          throw new FactsOutdatedError('contended');
        },
      };
      const refused = assert.rejects(opened.engine.run(contended, undefined, asIs), (err: unknown) => {
        assert.ok(err instanceof ContendedError);
        assert.match(err.message, new RegExp(`${COMMAND_TRIES} tries`));
        // What a client is answered: a conflict to send again, never an internal error.
        const answer = errorAnswer(err, () => assert.fail('a contended command is not reported as a bug'), 'req-1');
        assert.deepEqual([errorBody(answer).status, answer.code, answer.retryAfter], [409, 'CONFLICT', 1]);
        return true;
      });
      await refused;
      assert.deepEqual([prepared, named], [COMMAND_TRIES, COMMAND_TRIES]);
    }));

  it('names a command\'s actors once a try: it decides in the run that named them', () =>
    withOpenWorld(async (opened) => {
      let asked = 0;
      const counted: DomainCommand<undefined, number> = { name: 'counted', actors: () => (asked++, ['a']), decide: () => ({ events: [], reply: () => asked }) };
      assert.equal(await opened.engine.run(counted, undefined, asIs), 1);
    }));
});
