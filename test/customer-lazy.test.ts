// Customers loaded on first use (issue 38): a restart leaves the snapshot's customers in their
// chunks and reads one the first time a request asks for it, by id, by UMA address or by a
// listing. What a user sees across restarts is the same as if every customer had been built.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorNotHeldError, lazyHash } from '../src/engine/state-machine.js';
import { CHUNK_ITEMS, SnapshotStore } from '../src/engine/snapshot.js';
import { openLmdbStorage } from '../src/engine/storage.js';
import { startTestService, type TestService } from './support/service.js';
import { assertError, assertStatus, createCustomer, read, walk } from './support/assertions.js';

/** Creates `count` customers, every tenth with a UMA address of its own, and returns them as created. */
async function createMany(svc: TestService, count: number, tag: string): Promise<any[]> {
  const made: any[] = [];
  for (let i = 0; i < count; i++) made.push(await createCustomer(svc, i % 10 === 0 ? { umaAddress: `$${tag}.${i}@sandbox.uma.test` } : {}));
  return made;
}

async function withDataDir(name: string, run: (dataDir: string) => Promise<void>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
  try {
    await run(dataDir);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Starts the service on `dataDir`, runs `use`, and stops it keeping the data. */
async function session<T>(dataDir: string, use: (svc: TestService) => Promise<T>): Promise<T> {
  const svc = await startTestService({ dataDir });
  try {
    return await use(svc);
  } finally {
    await svc.stop({ keepData: true });
  }
}

/** Customers the restarted service holds built, before anyone asked for one. */
function built(svc: TestService): number {
  return svc.service.services.world.customers.records.size;
}

describe('customers loaded on first use after a restart', () => {
  it('a customer of the snapshot reads as before, its UMA address resolves and stays taken, and it lists in order with new ones', async () => {
    await withDataDir('lazy-read', async (dataDir) => {
      const made = await session(dataDir, async (svc) => {
        const customers = await createMany(svc, 300, 'base');
        // A deleted one stays readable, and out of the list.
        assertStatus(await svc.request('DELETE', `/customers/${customers[295].id}`), 200);
        await svc.service.services.engine.snapshot();
        return customers;
      });
      const live = made.filter((_, i) => i !== 295);
      const bodies = await session(dataDir, async (svc) => Promise.all(made.map((c) => read(svc, `/customers/${c.id}`))));
      const fresh = await session(dataDir, async (svc) => {
        assert.ok(built(svc) < 300, `a restart built ${built(svc)} of 300 customers`);
        // Asked first, before any read brings its customer's chunk in.
        const address = made[200].umaAddress as string;
        assertError(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress: address.toUpperCase() } }), 400, 'UMA_ADDRESS_TAKEN', ['umaAddress']);
        assert.equal(await read(svc, `/customers/${made[150].id}`), bodies[150]);
        const lookup = await svc.request('GET', `/receiver/uma/${encodeURIComponent(address)}`);
        assertStatus(lookup, 200);
        assert.equal(lookup.body.receiverUmaAddress, address);
        assert.deepEqual(
          lookup.body.supportedCurrencies.map((s: any) => s.currency.code),
          made[200].currencies,
        );
        const fresh = await createCustomer(svc);
        const listed = await walk(svc, '/customers', 100);
        // Newest first.
        assert.deepEqual(
          listed.items.map((c) => c.id),
          [fresh.id, ...live.map((c) => c.id).reverse()],
        );
        assert.deepEqual(
          listed.items.slice(1).map((c) => JSON.stringify(c)),
          bodies
            .filter((_, i) => i !== 295)
            .map((b) => JSON.stringify(JSON.parse(b)))
            .reverse(),
        );
        assert.equal(JSON.parse(await read(svc, `/customers/${made[295].id}`)).isDeleted, true);
        return fresh;
      });
      await session(dataDir, async (svc) => {
        // The first request: a page lists the snapshot's customers with the one made since, without building them all.
        const page = await svc.request('GET', '/customers?limit=10');
        assertStatus(page, 200);
        assert.deepEqual(
          page.body.data.map((c: any) => c.id),
          [fresh.id, ...live.slice(-9).map((c) => c.id).reverse()],
        );
        assert.ok(built(svc) < 300, `a page of 10 built ${built(svc)} of 301 customers`);
      });
    });
  });

  it('an update of a snapshot customer is there after the next restart, and a full snapshot after a lazy restart keeps the customers nobody read', async () => {
    await withDataDir('lazy-update', async (dataDir) => {
      const made = await session(dataDir, async (svc) => {
        const customers = await createMany(svc, 300, 'kept');
        await svc.service.services.engine.snapshot();
        return customers;
      });
      const untouched = await session(dataDir, async (svc) => {
        // The engine contract holds for a customer read from its chunk by the decision that asks for it.
        const { world } = svc.service.services;
        world.hold(new Set([made[0].id]));
        try {
          assert.throws(() => world.customers.get(made[290].id), ActorNotHeldError);
        } finally {
          world.hold(undefined);
        }
        return read(svc, `/customers/${made[290].id}`);
      });
      await session(dataDir, async (svc) => {
        const patched = await svc.request('PATCH', `/customers/${made[10].id}`, { body: { customerType: 'INDIVIDUAL', email: 'changed@example.com' } });
        assertStatus(patched, 200);
        await svc.service.services.engine.snapshot();
      });
      const more = await session(dataDir, async (svc) => {
        // Its neighbour first: the chunk of the base that holds both is read before the update's.
        assertStatus(await svc.request('GET', `/customers/${made[11].id}`), 200);
        assert.equal((await svc.request('GET', `/customers/${made[10].id}`)).body.email, 'changed@example.com');
        // More changes than the base holds twice over: the snapshot after them is full.
        const customers = await createMany(svc, 700, 'more');
        await svc.service.services.engine.snapshot();
        customers.push(await createCustomer(svc));
        await svc.service.services.engine.snapshot();
        assert.match(svc.reportLines.join('\n'), /snapshot at \d+ \(full\)/);
        return customers;
      });
      await session(dataDir, async (svc) => {
        assert.ok(built(svc) < 1000, `a restart built ${built(svc)} of 1,000 customers`);
        assertError(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress: made[280].umaAddress } }), 400, 'UMA_ADDRESS_TAKEN', ['umaAddress']);
        assert.equal(await read(svc, `/customers/${made[290].id}`), untouched);
        assert.equal((await svc.request('GET', `/customers/${made[10].id}`)).body.email, 'changed@example.com');
        const listed = await walk(svc, '/customers', 100);
        assert.deepEqual(
          listed.items.map((c) => c.id),
          [...made, ...more].map((c) => c.id).reverse(),
        );
      });
    });
  });

  it("finds a customer's chunk by the hash of `uma <environment> <address lower-cased>`, the key session 40's stores were written with", async () => {
    const svc = await startTestService();
    try {
      const made = await createCustomer(svc, { umaAddress: '$Key.Parts@sandbox.uma.test' });
      const customer = svc.service.services.world.customers.records.get(made.id)!;
      const keys = (record: typeof customer): number[] => {
        const hashes: number[] = [];
        svc.service.services.world.customers.lazyKeys(record, (hash) => hashes.push(hash));
        return hashes;
      };
      const expected = lazyHash(`uma ${customer.envId} $key.parts@sandbox.uma.test`);
      assert.deepEqual(keys(customer), [expected]);
      // Hashed without building the key, case folded on the fly: the same for an address held upper-cased.
      assert.deepEqual(keys({ ...customer, umaAddress: '$KEY.PARTS@SANDBOX.UMA.TEST' }), [expected]);
    } finally {
      await svc.stop();
    }
  });

  it('hashes a key in parts, case folded, as the whole lower-cased key would hash', () => {
    for (const text of ['$Mixed.Case-9@Sandbox.UMA.test', 'İSTANBUL', 'ΣΊΣΥΦΟΣ', '\u212Aelvin', 'AZ[@`az{']) {
      const whole = lazyHash(`uma env ${text.toLowerCase()}`);
      assert.equal(lazyHash(text, lazyHash('uma env '), true), whole, text);
      assert.equal(lazyHash(text.toLowerCase(), lazyHash(' ', lazyHash('env', lazyHash('uma ')))), whole, text);
    }
  });
});

describe("a generation's lazy chunks and their directory", () => {
  it('finds every record by each key the machine gave, the last of a full chunk as any other', async () => {
    await withDataDir('lazy-directory', async (dataDir) => {
      // Two full chunks and part of a third: the meter stands still, so chunks are cut by CHUNK_ITEMS alone.
      const ids = Array.from({ length: 2 * CHUNK_ITEMS + 40 }, (_, i) => `Thing:${String(i).padStart(6, '0')}`);
      const otherKey = (id: string): number => lazyHash(` other ${id.toUpperCase()}`);
      const storage = openLmdbStorage(dataDir);
      try {
        await new SnapshotStore(storage, () => 0).write({
          seq: 1,
          at: 0,
          full: true,
          records: ids.map((id) => [id, { id }] as const),
          timers: [],
          effects: [],
          idempotency: [],
          counts: { timers: 0, effects: 0, idempotency: 0 },
          lazyKeys: (id, _record, key) => {
            key(otherKey(id));
            return { kind: 'Thing:', drop: false };
          },
        });
        const lazy = new SnapshotStore(storage, () => 0).stream()!.lazy!;
        const holding = (chunks: ReturnType<typeof lazy.byId>, id: string): number => chunks.filter((chunk) => chunk.read()[0].includes(id)).length;
        for (const id of ids) {
          assert.equal(holding(lazy.byId(id), id), 1, `${id} by its id`);
          assert.equal(holding(lazy.byKey(otherKey(id)), id), 1, `${id} by its other key`);
        }
        assert.deepEqual(lazy.byId('Thing:999999'), [], 'an id above every one written probes no chunk');
      } finally {
        await storage.close();
      }
    });
  });
});
