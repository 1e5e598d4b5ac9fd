// Log format version 3 (src/engine/log-layout.ts): a commit group's customer.opened events
// with the defaults are written as rows, every other event as msgpack, and everything reads
// back as it was written: over a restart of the service, and event for event from the group.
// Rows that do not parse are damage, refused like a bad checksum.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { decodeGroup } from '../src/engine/log.js';
import { GroupLayout } from '../src/engine/log-layout.js';
import { encodeStored, LAID_OUT_FORMAT_VERSION, StoreCorruptError } from '../src/engine/format.js';
import type { EventLayout } from '../src/engine/state-machine.js';
import { World } from '../actors/world.js';
import { decideCreateCustomer } from '../actors/customer.js';
import { sandboxEnv } from './support/sandbox-env.js';
import { startTestService } from './support/service.js';
import { createCustomer, read } from './support/assertions.js';

const OPENED: EventLayout = { type: 'customer.opened', fields: [['u', 'ascii'], ['e', 'shared'], ['r', 'shared'], ['c', 'shared']] };

/** A group's value as the log writes it: the events laid out where they fit. */
function groupValue(first: number, entries: Array<[at: number, events: Array<{ type: string }>]>): Buffer {
  const layout = new GroupLayout(new Map([[OPENED.type, OPENED]]));
  const stored = entries.map(([at, events]) => [at, events.map((event) => layout.place(event))]);
  const laid = layout.done();
  return laid === undefined ? encodeStored([first, stored]) : encodeStored([first, stored, laid.layouts, laid.table, laid.rows], LAID_OUT_FORMAT_VERSION);
}

describe('log groups with laid-out events (format version 3)', () => {
  it('customers created in one turn are one version 3 group, and read the same after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'log-layout-'));
    try {
      const svc = await startTestService({ dataDir });
      const created: string[] = [];
      const bodies = new Map<string, string>();
      try {
        // One event-loop turn: one commit group, defaults and a profile mixed.
        const made = await Promise.all([createCustomer(svc), createCustomer(svc, { email: 'ada@example.com', fullName: 'Ada' }), createCustomer(svc), createCustomer(svc, { region: 'MX' })]);
        for (const customer of made) created.push(customer.id as string);
        for (const id of created) bodies.set(id, await read(svc, `/customers/${id}`));
      } finally {
        await svc.stop({ keepData: true });
      }
      const root = open({ path: dataDir });
      const versions: number[] = [];
      const opened: Array<Record<string, unknown>> = [];
      try {
        const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
        for (const { key, value } of log.getRange()) {
          const events = decodeGroup<Record<string, unknown> & { type: string }>(key, value).flatMap((entry) => entry.events);
          if (!events.some((event) => event.type === 'customer.opened')) continue;
          versions.push(value[0]!);
          opened.push(...events.filter((event) => event.type === 'customer.opened'));
        }
      } finally {
        await root.close();
      }
      assert.ok(versions.includes(LAID_OUT_FORMAT_VERSION), `groups of versions ${versions.join(', ')}`);
      assert.equal(opened.length, 4);
      // A laid-out event reads back with its fields in the order the decision wrote them.
      assert.deepEqual(Object.keys(opened[0]!), ['type', 'u', 'e', 'r', 'c']);
      assert.ok(opened.some((event) => event.m === 'ada@example.com' && event.n === 'Ada'), 'the profile is logged as written');

      const again = await startTestService({ dataDir });
      try {
        for (const id of created) assert.equal(await read(again, `/customers/${id}`), bodies.get(id), `${id} after the restart`);
      } finally {
        await again.stop({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('reads back every event of a mixed group exactly, laying out only those that fit', () => {
    const env = 'Platform:01a21ecb-c350-7031-bdcc-353cfbc512d4#sandbox';
    const entries: Array<[number, Array<{ type: string } & Record<string, unknown>>]> = [
      [1_000, [{ type: 'customer.opened', u: '01a21ecd-2692-7039-be46-a88f3eb58300', e: env, r: 'US', c: ['USD', 'USDC'] }]],
      [1_000, [{ type: 'customer.opened', u: '01a21ecd-2692-703a-8d85-49f0b95a3200', e: env, r: 'MX', c: ['MXN'] }, { type: 'note', text: 'plain' }]],
      // Not laid out: a profile field, a text that is not ASCII, a list that is not of strings.
      [1_001, [{ type: 'customer.opened', u: '01a21ecd-2692-703b-a38f-bf6bf739d900', e: env, r: 'US', c: ['USD'], m: 'a@example.com' }]],
      [1_002, [{ type: 'customer.opened', u: 'é-not-ascii', e: env, r: 'US', c: ['USD'] }]],
      [1_003, [{ type: 'customer.opened', u: '01a21ecd-2692-703c-a38f-bf6bf739d900', e: env, r: 'US', c: [1, 2] }]],
      [1_004, [{ type: 'customer.opened', u: '01a21ecd-2692-703d-a38f-bf6bf739d900', e: env, r: 'US', c: ['USD', 'USDC'] }]],
    ];
    const value = groupValue(40, entries);
    assert.equal(value[0], LAID_OUT_FORMAT_VERSION);
    const read = decodeGroup<Record<string, unknown>>(40, value);
    assert.deepEqual(
      read,
      entries.map(([at, events], i) => ({ seq: 40 + i, at, events })),
    );
    // The group's events share its table's values.
    assert.equal(read[0]!.events[0]!.e, read[1]!.events[0]!.e);

    // A group with nothing laid out is version 2, as every group was before.
    assert.equal(groupValue(7, [[1, [{ type: 'note' }]]])[0], 2);
  });

  it('refuses rows that do not parse, or that entries name twice or not at all, as damage', () => {
    const layouts = [[OPENED.type, ['u', 'e', 'r', 'c'], 'asss']];
    const row = (u: string, e: number, r: number, c: number): Buffer => {
      const bytes = Buffer.alloc(2 + u.length + 6);
      bytes[0] = 0;
      bytes[1] = u.length;
      bytes.write(u, 2, 'latin1');
      bytes.writeUInt16LE(e, 2 + u.length);
      bytes.writeUInt16LE(r, 4 + u.length);
      bytes.writeUInt16LE(c, 6 + u.length);
      return bytes;
    };
    const table = ['Platform:p#sandbox', 'US', ['USD']];
    const value = (entries: unknown[], rows: Buffer): Buffer => encodeStored([9, entries, layouts, table, rows], LAID_OUT_FORMAT_VERSION);
    const good = row('abc', 0, 1, 2);
    assert.deepEqual(decodeGroup(9, value([[5, [0]]], good))[0]!.events, [{ type: 'customer.opened', u: 'abc', e: 'Platform:p#sandbox', r: 'US', c: ['USD'] }]);
    const damaged: Array<[string, Buffer]> = [
      ['a shared value the table does not have', value([[5, [0]]], row('abc', 0, 1, 3))],
      ['a row cut short', value([[5, [0]]], good.subarray(0, good.length - 1))],
      ['a row naming no layout', value([[5, [0]]], Buffer.concat([Buffer.from([1]), good.subarray(1)]))],
      ['an entry naming a row the group does not have', value([[5, [1]]], good)],
      ['two entries naming one row', value([[5, [0]], [6, [0]]], good)],
      ['a row no entry names', value([[5, [0]]], Buffer.concat([good, good]))],
    ];
    for (const [what, bytes] of damaged) {
      assert.throws(() => decodeGroup(9, bytes), (err: unknown) => err instanceof StoreCorruptError && /log entry (9|10)/.test(err.where), what);
    }
  });

  it('World lays out customer.opened with exactly the fields a customer created with the defaults is logged with', () => {
    const world = new World();
    assert.deepEqual(world.logLayouts, [OPENED]);
    const at = Date.UTC(2026, 0, 2);
    const env = sandboxEnv(at);
    world.apply({ type: 'platform.env.created', env }, at);
    const [event] = decideCreateCustomer(env, { customerType: 'INDIVIDUAL' }, world.customers, at);
    assert.deepEqual(Object.keys(event!), ['type', ...OPENED.fields.map(([name]) => name)]);
  });
});
