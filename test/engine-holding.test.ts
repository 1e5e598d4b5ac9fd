// The engine contract as an assertion: a decision reads and writes only the records of the
// actors it holds (or records it creates). Commands from actors/commands run on the real
// domain; a command that names too few actors fails here instead of racing in production.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { World, type DomainCommand, type DomainEvent, type TimerMessage } from '../actors/world.js';
import { newPlatformEnv, type PlatformEnv } from '../actors/platform.js';
import { createCustomer, deleteCustomer } from '../actors/commands/customers.js';
import type { Customer } from '../actors/customer.js';
import { ManualClock } from '../src/engine/clock.js';
import { ActorsChangedError, Engine } from '../src/engine/engine.js';
import { newId } from '../src/engine/ids.js';
import { ActorNotHeldError } from '../src/engine/state-machine.js';
import { tempDir } from './support/counter-machine.js';

interface Opened {
  engine: Engine<DomainEvent, TimerMessage, World>;
  world: World;
  env: PlatformEnv;
  fatal: string[];
  close: () => Promise<void>;
}

async function openWorld(): Promise<Opened> {
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
  const at = clock.now();
  const env = newPlatformEnv(
    {
      platformId: newId('Platform', at),
      environment: 'sandbox',
      token: { tokenId: 'tok', secretHash: '0'.repeat(64) },
      umaDomain: 'sandbox.uma.test',
      isRegulatedFinancialInstitution: false,
      webhookPublicKey: '04',
      webhookPrivateKeySealed: new Uint8Array(0),
    },
    at,
  );
  await engine.exec([env.id], () => ({ events: [{ type: 'platform.env.created', env }], reply: () => undefined }));
  return {
    engine,
    world,
    env,
    fatal,
    close: async () => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const asIs = <R>(result: R): R => result;

async function newCustomer(opened: Opened): Promise<Customer> {
  return opened.engine.run(createCustomer, { envId: opened.env.id, customer: { customerType: 'INDIVIDUAL' } }, asIs);
}

describe('the holding check', () => {
  it('runs a command that names its actors; the same command naming too few is refused and changes nothing', async () => {
    const opened = await openWorld();
    try {
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
    } finally {
      await opened.close();
    }
  });

  it('checks writes while the events apply: a decision that reads nothing but writes an unheld record stops the engine', async () => {
    const opened = await openWorld();
    try {
      const customer = await newCustomer(opened);
      const blind: DomainCommand<string, undefined> = {
        name: 'blind write',
        actors: () => [opened.env.id],
        decide: (id, _world, at) => ({ events: [{ type: 'customer.updated', customer: { ...customer, id, isDeleted: true, updatedAt: at }, accounts: [] }], reply: () => undefined }),
      };
      // The engine stops (a test records it instead of exiting): memory is ahead of the log.
      await assert.rejects(opened.engine.run(blind, customer.id, asIs));
      assert.deepEqual(opened.fatal, ['a decision failed after it was applied']);
    } finally {
      await opened.close();
    }
  });

  it('lets a decision use records it creates, which no other actor can know of yet', async () => {
    const opened = await openWorld();
    try {
      // createCustomer holds only the environment; its reply reads the new customer and its accounts.
      const customer = await newCustomer(opened);
      assert.ok(opened.world.internalAccounts.idsOwnedBy(customer.id).length > 0);
    } finally {
      await opened.close();
    }
  });

  it('asks a command for its actors again once they are held, and holds the new ones too', async () => {
    const opened = await openWorld();
    try {
      const asked: string[][] = [];
      let calls = 0;
      const growing: DomainCommand<undefined, number> = {
        name: 'growing',
        actors: () => {
          calls++;
          const actors = calls === 1 ? ['a'] : ['a', 'b'];
          asked.push(actors);
          return actors;
        },
        decide: () => ({ events: [], reply: () => calls }),
      };
      assert.equal(await opened.engine.run(growing, undefined, asIs), 3);
      assert.deepEqual(asked, [['a'], ['a', 'b'], ['a', 'b']]);
      const restless: DomainCommand<undefined, number> = { name: 'restless', actors: () => [`x${calls++}`], decide: () => ({ events: [], reply: () => 0 }) };
      await assert.rejects(opened.engine.run(restless, undefined, asIs), ActorsChangedError);
    } finally {
      await opened.close();
    }
  });
});
