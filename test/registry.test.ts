// The record-kind registry (actors/registry.ts): a new kind joins the state machine by
// registering, and World's own code stays as it is. A toy kind of notes that also counts
// customers shows each part: dispatch by event type (two kinds applying one type), restore
// by id prefix, capture, invariants that look at other kinds, and the refusals.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RecordMap, Registry, type Appliers, type RecordKind, type RecordLookup } from '../actors/registry.js';
import { World } from '../actors/world.js';
import { decideCreateCustomer, openedCustomerId } from '../actors/customer.js';
import type { PlatformEnv } from '../actors/platform.js';
import { sandboxEnv } from './support/sandbox-env.js';
import { ChangeLog, ChangeTrackingMap, latestOf } from '../src/engine/change-log.js';
import type { DomainChanges } from '../src/engine/state-machine.js';

interface Note {
  readonly id: string;
  readonly about: string;
  readonly text: string;
}

type NoteEvent = { type: 'note.written'; note: Note } | { type: 'ping'; count: number };

class Notes implements RecordKind<Note, NoteEvent> {
  readonly idPrefix = 'Note:';
  readonly #notes = new RecordMap<Note>();
  readonly records: ReadonlyMap<string, Note> = this.#notes;
  pings = 0;
  readonly appliers: Appliers<NoteEvent> = {
    'note.written': (event) => this.restore(event.note),
    ping: (event) => {
      this.pings += event.count;
    },
  };
  restore(note: Note): void {
    this.#notes.set(note.id, note);
  }
  checkInvariants(lookup: RecordLookup): string[] {
    return [...this.#notes.values()].filter((n) => !lookup.has(n.about)).map((n) => `${n.id} is about unknown ${n.about}`);
  }
}

class Pings implements RecordKind<never, Extract<NoteEvent, { type: 'ping' }>> {
  readonly idPrefix = 'Ping:';
  readonly records: ReadonlyMap<string, never> = new RecordMap<never>();
  seen = 0;
  readonly appliers: Appliers<Extract<NoteEvent, { type: 'ping' }>> = {
    ping: () => {
      this.seen++;
    },
  };
  restore(): void {}
  checkInvariants(): string[] {
    return [];
  }
}

class NoteBook extends Registry<NoteEvent, never> {
  readonly notes = new Notes();
  readonly pings = new Pings();
  constructor(extra?: RecordKind<Note, NoteEvent>) {
    super();
    this.register(this.notes);
    this.register(this.pings);
    if (extra !== undefined) this.register(extra);
  }
  onTimer(): NoteEvent[] {
    return [];
  }
}

/** Reads a written note's id only. */
class NoteIds implements RecordKind<never, { type: 'note.written'; note: { id: string } }> {
  readonly idPrefix = 'NoteId:';
  readonly records: ReadonlyMap<string, never> = new RecordMap<never>();
  readonly ids: string[] = [];
  readonly appliers: Appliers<{ type: 'note.written'; note: { id: string } }> = { 'note.written': (event) => void this.ids.push(event.note.id) };
  restore(): void {}
  checkInvariants(): string[] {
    return [];
  }
}

/** Reads pings as if `count` were text: no ping of NoteEvent fits, so it cannot be registered. */
class TextPings implements RecordKind<never, { type: 'ping'; count: string }> {
  readonly idPrefix = 'TextPing:';
  readonly records: ReadonlyMap<string, never> = new RecordMap<never>();
  readonly appliers: Appliers<{ type: 'ping'; count: string }> = { ping: () => undefined };
  restore(): void {}
  checkInvariants(): string[] {
    return [];
  }
}

/** A kind declares the shape it reads: fewer fields than the event has fit; other types do not compile. */
export class CheckedNoteBook extends Registry<NoteEvent, never> {
  constructor() {
    super();
    // Reads only the id of a written note: fits.
    this.register(new NoteIds());
    // @ts-expect-error a ping's count is a number, not text
    this.register(new TextPings());
  }
  onTimer(): NoteEvent[] {
    return [];
  }
}

/** A World holding one sandbox environment (token id `tok`), created now. */
function worldWithSandbox(): { world: World; env: PlatformEnv; at: number } {
  const world = new World();
  const at = Date.now();
  const env = sandboxEnv(at);
  world.apply({ type: 'platform.env.created', env }, at);
  return { world, env, at };
}

/** The changes a capture noted, each record once with its last change (as a snapshot's writer reads them). */
function changesOf(changes: DomainChanges): Array<[string, unknown]> {
  const [ids, records] = latestOf(changes.noted, changes.values);
  return ids.map((id, i) => [id, records[i]]);
}

describe('record-kind registry', () => {
  it('dispatches each event type to every kind that applies it, restores by id prefix, checks invariants across kinds', () => {
    const book = new NoteBook();
    const note: Note = { id: 'Note:1', about: 'Note:1', text: 'self' };
    book.apply({ type: 'note.written', note }, 0);
    book.apply({ type: 'ping', count: 3 }, 0);
    assert.equal(book.notes.pings, 3);
    assert.equal(book.pings.seen, 1);
    assert.deepEqual(book.capture(), [['Note:1', note]]);
    assert.deepEqual(book.checkInvariants(), []);

    const copy = new NoteBook();
    copy.restore([...book.capture(), ['Note:2', { id: 'Note:2', about: 'Customer:x', text: 'dangling' }]]);
    assert.equal(copy.notes.records.get('Note:1'), note);
    assert.ok(copy.has('Note:2'));
    assert.ok(!copy.has('Customer:x'));
    assert.deepEqual(copy.checkInvariants(), ['Note:2 is about unknown Customer:x']);
  });

  it('refuses an event type no kind applies, a record of no kind, and two kinds with one prefix', () => {
    const book = new NoteBook();
    assert.throws(() => book.apply({ type: 'note.erased' } as unknown as NoteEvent, 0), /no record kind applies note.erased/);
    assert.throws(() => book.restore([['Memo:1', {}]]), /unknown kind: Memo:1/);
    assert.throws(() => new NoteBook(new Notes()), /two record kinds use the id prefix Note:/);
  });

  it("World's kinds: a created customer lands in customers and internal accounts, and survives capture and restore", () => {
    const { world, env, at } = worldWithSandbox();
    const [created] = decideCreateCustomer(world.envs.get(env.id)!, { customerType: 'INDIVIDUAL' }, world.customers, at);
    world.apply(created!, at);
    const customerId = openedCustomerId(created!);
    assert.equal(world.internalAccounts.idsOwnedBy(customerId).length, 3);

    const restored = new World();
    restored.restore(world.capture());
    assert.deepEqual(restored.capture(), world.capture());
    assert.equal(restored.envs.token('tok')?.envId, env.id);
    assert.equal(restored.customers.umaOwner(env.id, world.customers.get(customerId)!.umaAddress), customerId);
    assert.deepEqual(restored.internalAccounts.idsOwnedBy(customerId), world.internalAccounts.idsOwnedBy(customerId));
    assert.deepEqual(restored.checkInvariants(), []);
  });
  it('notes every stored record a change touches, for incremental snapshots; restoring is not a change', () => {
    const { world, env, at } = worldWithSandbox();
    assert.deepEqual(changesOf(world.captureChanges()), [[env.id, world.envs.get(env.id)]]);
    const [created] = decideCreateCustomer(world.envs.get(env.id)!, { customerType: 'INDIVIDUAL' }, world.customers, at);
    world.apply(created!, at);
    const changes = changesOf(world.captureChanges());
    // Exactly the stored records the create added (the environment did not change).
    assert.deepEqual(
      [...changes].sort(),
      world.capture().filter(([id]) => id !== env.id).sort(),
    );
    assert.ok(changes.some(([id]) => id === `Customer:${created!.type === 'customer.opened' ? created!.u : ''}`));
    assert.deepEqual(changesOf(world.captureChanges()), [], 'taken once');
    // A record written again and again between snapshots is one change, and the log of
    // changes does not grow with the writes.
    const customerId = openedCustomerId(created!);
    const account = world.internalAccounts.idsOwnedBy(customerId)[0]!;
    const log = new ChangeLog<string>();
    for (let i = 0; i < 300_000; i++) log.note(i % 3 === 0 ? account : i % 3 === 1 ? customerId : env.id, i);
    assert.ok(log.length <= 65_536, `the log holds ${log.length} keys for 3 written 300,000 times`);
    assert.deepEqual(log.take(), [[account, 299_997], [customerId, 299_998], [env.id, 299_999]], 'each key once, in the order first noted, with its last value');
    assert.deepEqual(log.take(), []);

    const restored = new World();
    restored.restore(world.capture());
    assert.deepEqual(changesOf(restored.captureChanges()), []);
    // The columns a full snapshot takes hold what capture holds.
    const { ids, records } = restored.captureColumns();
    assert.deepEqual(
      ids.map((id, i) => [id, records[i]]),
      restored.capture(),
    );
  });

  it('a customer opened twice is refused, whether the map or its lazy loader holds the first', () => {
    const { world, env, at } = worldWithSandbox();
    const [created] = decideCreateCustomer(world.envs.get(env.id)!, { customerType: 'INDIVIDUAL' }, world.customers, at);
    world.apply(created!, at);
    assert.throws(() => world.apply(created!, at + 1), /which exists/);

    // RecordMap.add, as a new record is put: one the loader holds counts as held.
    const map = new RecordMap<Note>();
    const held: Note = { id: 'Note:held', about: 'Note:held', text: 'in a chunk' };
    map.loadWith({ load: (id) => (id === held.id ? map.install(id, held) : undefined), loadAll: () => undefined });
    assert.equal(map.add('Note:new', { id: 'Note:new', about: 'Note:new', text: 'new' }), true);
    assert.equal(map.add(held.id, { ...held, text: 'again' }), false);
    assert.equal(map.add('Note:new', { id: 'Note:new', about: 'Note:new', text: 'again' }), false);
  });

  it('a change log holds each key written over and over a bounded number of times, and every key once when taken', () => {
    // The bound counts what the maps noting into the log hold: rewriting a large map's keys
    // lets the log grow to twice their number, no further; creating keys is never searched.
    const log = new ChangeLog<string>();
    const map = new ChangeTrackingMap<string, number>();
    map.track(log);
    const keys = Array.from({ length: 100_000 }, (_, i) => `Customer:${i}`);
    for (const key of keys) map.set(key, 0);
    assert.equal(log.length, 100_000, 'each created key is noted');
    for (let round = 1; round <= 5; round++) for (const key of keys) map.set(key, round);
    assert.ok(log.length <= 200_000, `the log holds ${log.length} keys for 100,000 written 6 times`);
    // A few keys rewritten past the floor: the log drops its duplicates at the floor.
    for (let i = 0; i < 300_000; i++) map.set(keys[i % 3]!, i);
    assert.ok(log.length <= 200_000, `the log holds ${log.length} keys after 300,000 more writes of 3 keys`);
    // Keys removed count as distinct keys the log may hold: removing them does not make it search more often than needed.
    for (const key of keys.slice(0, 50_000)) map.delete(key);
    const taken = log.take();
    assert.equal(taken.length, 100_000, 'each key once');
    assert.deepEqual(taken.slice(0, 3), [[keys[0], undefined], [keys[1], undefined], [keys[2], undefined]], 'in the order first noted, with its last value (removed)');
    assert.deepEqual(taken[50_000], [keys[50_000], 5], 'a key set six times: its last value');
    // With few keys in the maps, a key rewritten over and over is dropped to once at the floor.
    const small = new ChangeTrackingMap<string, number>();
    const smallLog = new ChangeLog<string>();
    small.track(smallLog);
    for (let i = 0; i < 300_000; i++) small.set(keys[i % 3]!, i);
    assert.ok(smallLog.length <= 65_536, `the log holds ${smallLog.length} keys for 3 written 300,000 times`);
    assert.deepEqual(smallLog.take(), [[keys[0], 299_997], [keys[1], 299_998], [keys[2], 299_999]]);
    // And with many: a few hot keys of a large map (payments on a few accounts of many) are dropped to once at the floor too.
    log.take();
    let most = 0;
    for (let i = 0; i < 300_000; i++) {
      map.set(keys[50_000 + (i % 3)]!, i);
      most = Math.max(most, log.length);
    }
    assert.ok(most <= 65_536, `the log held ${most} keys for 3 of 50,000 written 300,000 times`);
    assert.deepEqual(log.take(), [[keys[50_000], 299_997], [keys[50_001], 299_998], [keys[50_002], 299_999]]);
  });

  it('a record written again a few writes later is noted once: the version it replaced is not kept for the snapshot', () => {
    // An immediate payment makes its quote and executes it in one entry, its accounts' writes between.
    const log = new ChangeLog<string>();
    const map = new ChangeTrackingMap<string, string>();
    map.track(log);
    for (let i = 0; i < 1_000; i++) {
      map.set(`Quote:${i}`, 'made');
      map.set('InternalAccount:a', `a${i}`);
      map.set(`InternalAccount:b${i % 10}`, `b${i}`);
      map.set(`Quote:${i}`, 'executed');
    }
    const { keys, values } = log.takeNoted();
    assert.equal(keys.filter((key) => key.startsWith('Quote:')).length, 1_000, 'each quote noted once');
    assert.ok(values.every((value, i) => !keys[i]!.startsWith('Quote:') || value === 'executed'), 'with its last version');
    // A key written in every entry keeps its first place while that is among the latest notes.
    const hot = keys.filter((key) => key === 'InternalAccount:a').length;
    assert.ok(hot <= 250, `a key written in each of 1,000 entries of four writes was noted ${hot} times`);
    // Past the window a key is noted again (the writer drops the repeat), with the later value.
    for (let i = 0; i < 20; i++) map.set(`Customer:${i}`, 'v1');
    map.set('Customer:0', 'v2');
    assert.deepEqual(log.take().slice(0, 2), [['Customer:0', 'v2'], ['Customer:1', 'v1']]);
  });
});
