// Shard ownership on a real three-server JetStream cluster. Leases (src/cluster/lease.ts):
// one holder at a time, kept by renewing, taken over only after expiry, given up at once by
// release, and a holder that was too slow learns it lost the lease and may no longer serve.
// Membership (src/cluster/membership.ts): nodes are live while they beat, and shards are
// dealt evenly over the live ones. Placement (src/cluster/placement.ts): an environment's
// shard is a pure function of its id and the deployment's shard count.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LeaseTable } from '../src/cluster/lease.js';
import { assignShards, Membership } from '../src/cluster/membership.js';
import { Placement, shardOf } from '../src/cluster/placement.js';
import { natsClusterForSuite } from './support/nats-cluster.js';

const LEASE_MS = 10_000;
const nats = natsClusterForSuite(3);
/** The wall clock the lease tables read: tests move it instead of sleeping. */
let now = Date.UTC(2026, 0, 1);

const table = (nodeId: string): Promise<LeaseTable> => LeaseTable.open(nats.nc, { nodeId, leaseMs: LEASE_MS, replicas: 3, now: () => now });

describe('shard leases', () => {
  it('have one holder until they expire, then the next taker gets a later term', async () => {
    const [a, b] = [await table('a'), await table('b')];
    const held = await a.acquire('s1');
    assert.ok(held !== undefined);
    assert.equal(await b.acquire('s1'), undefined, 'taken while live');
    assert.deepEqual(await b.holder('s1'), { owner: 'a', expiresAt: now + LEASE_MS });
    assert.equal(a.holds(held), true);

    now += LEASE_MS - 1_000;
    assert.equal(a.holds(held), false, 'the holder stops serving before the lease can expire elsewhere');
    assert.equal(await b.acquire('s1'), undefined, 'not expired yet for the others');
    now += 1_001;
    const taken = await b.acquire('s1');
    assert.ok(taken !== undefined);
    assert.ok(taken.term > held.term);
    assert.equal(await a.renew(held), false, 'the old holder learns it lost the lease');
    assert.equal(a.holds(held), false);
  });

  it('are kept by renewing for as long as the holder renews', async () => {
    const [a, b] = [await table('a'), await table('b')];
    const held = await a.acquire('s2');
    assert.ok(held !== undefined);
    for (let n = 0; n < 5; n++) {
      now += LEASE_MS / 2;
      assert.equal(await a.renew(held), true);
      assert.equal(await b.acquire('s2'), undefined);
    }
    assert.equal(a.holds(held), true);
    assert.equal(held.term < held.revision, true, 'the term stays the revision it was taken at');
  });

  it('are given up at once by release', async () => {
    const [a, b] = [await table('a'), await table('b')];
    const held = await a.acquire('s3');
    assert.ok(held !== undefined);
    await a.release(held);
    assert.equal(a.holds(held), false);
    assert.equal(await b.holder('s3'), undefined);
    assert.ok((await b.acquire('s3')) !== undefined);
  });

  it('go to one of several nodes racing for the same expired lease', async () => {
    const nodes = await Promise.all(['a', 'b', 'c', 'd'].map(table));
    const won = await Promise.all(nodes.map((node) => node.acquire('s4')));
    assert.equal(won.filter((lease) => lease !== undefined).length, 1);
  });
});

describe('membership', () => {
  const member = (nodeId: string): Promise<Membership> => Membership.open(nats.nc, { nodeId, leaseMs: LEASE_MS, replicas: 3, now: () => now });

  it('counts a node live while it beats within a lease period, and gone at once when it leaves', async () => {
    const [a, b, c] = [await member('a'), await member('b'), await member('c')];
    await Promise.all([a.heartbeat(), b.heartbeat(), c.heartbeat()]);
    assert.deepEqual([...(await a.live()).keys()].sort(), ['a', 'b', 'c']);
    assert.equal((await a.live()).get('b')?.seenAt, now, 'a node is seen when it last beat');

    now += LEASE_MS / 2;
    await Promise.all([a.heartbeat(), b.heartbeat()]);
    now += LEASE_MS / 2;
    assert.deepEqual([...(await b.live()).keys()].sort(), ['a', 'b'], 'c stopped beating a lease period ago');

    await b.leave();
    assert.deepEqual([...(await a.live()).keys()], ['a']);
  });

  it('deals every shard to exactly one live node, none more than one above another', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 40 }), fc.uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { maxLength: 6 }), (shards, nodes) => {
        const owners = assignShards(shards, nodes);
        if (nodes.length === 0) return assert.equal(owners.size, 0);
        assert.deepEqual([...owners.keys()].sort(), [...shards].sort());
        const counts = new Map(nodes.map((node) => [node, 0]));
        for (const owner of owners.values()) counts.set(owner, counts.get(owner)! + 1);
        assert.equal(counts.size, nodes.length, 'only live nodes own shards');
        assert.ok(Math.max(...counts.values()) - Math.min(...counts.values()) <= 1);
        // The same members in another order give the same owners.
        assert.deepEqual(assignShards([...shards].reverse(), [...nodes].reverse()), owners);
      }),
    );
  });
});

describe('placement', () => {
  it("puts an environment in the shard the first four bytes of its id's SHA-256 name, modulo the count", () => {
    // SHA-256("a") begins ca978112: 3398926610, which is 2 modulo 16 and 274 modulo 1024.
    assert.equal(shardOf('a', 16), 's0002');
    assert.equal(shardOf('a', 1024), 's0274');
    assert.equal(shardOf('a', 1), 's0000');
    const envId = 'Platform:0190a3c4-7b1e-7000-8000-000000000001#sandbox';
    assert.deepEqual([shardOf(envId, 16), shardOf(envId.replace('sandbox', 'production'), 16)], ['s0008', 's0014']);
    assert.deepEqual(new Placement(3).shards, ['s0000', 's0001', 's0002']);
    assert.deepEqual([...new Placement(12).shards].sort(), new Placement(12).shards, 'names sort as their indexes');
  });

  it('spreads environments over every shard, about evenly', () => {
    const placement = new Placement(16);
    const counts = new Map(placement.shards.map((shard) => [shard, 0]));
    for (let n = 0; n < 16_000; n++) {
      const shard = placement.shardOf(`Platform:${n}#sandbox`);
      counts.set(shard, counts.get(shard)! + 1);
    }
    assert.equal(counts.size, 16, 'no shard outside the placement');
    for (const [shard, count] of counts) assert.ok(count > 900 && count < 1_100, `${shard} holds ${count} of 16,000`);
  });
});
