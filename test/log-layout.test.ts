// Log format versions 3 and 4 (src/engine/log-layout.ts): a commit group's customer.opened
// events with the defaults, and a payment's quote.decided and payment.decided, are written as
// rows, every other event as msgpack, and everything reads back as it was written: over a
// restart of the service, and event for event from the group, as msgpack would give it.
// Rows that do not parse are damage, refused like a bad checksum.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { decodeGroup } from '../src/engine/log.js';
import { GroupLayout } from '../src/engine/log-layout.js';
import { decodeStored, encodeStored, StoreCorruptError } from '../src/engine/format.js';
import { loggedId, newId } from '../src/engine/ids.js';
import type { EventLayout } from '../src/engine/state-machine.js';
import { World } from '../actors/world.js';
import { decideCreateCustomer } from '../actors/customer.js';
import { QUOTE_DECIDED_LAYOUT } from '../actors/quote.js';
import { PAYMENT_DECIDED_LAYOUT } from '../actors/payment-recorded.js';
import { sandboxEnv } from './support/sandbox-env.js';
import { startTestService } from './support/service.js';
import { createCustomer, read } from './support/assertions.js';
import { createQuote, fundedCustomer, getJson, quoteBody } from './support/money.js';

const OPENED: EventLayout = { type: 'customer.opened', fields: [['u', 'ascii'], ['e', 'shared'], ['r', 'shared'], ['c', 'shared']] };

/** A group's value as the log writes it: the events laid out where they fit (none when `layouts` is empty). */
function groupValue(first: number, entries: Array<[at: number, events: Array<{ type: string }>]>, layouts: EventLayout[] = [OPENED]): Buffer {
  const layout = new GroupLayout(new Map(layouts.map((each) => [each.type, each])));
  const stored = entries.map(([at, events]) => [at, events.map((event) => layout.place(event))]);
  const laid = layout.done();
  return laid === undefined ? encodeStored([first, stored]) : encodeStored([first, stored, laid.layouts, laid.table, laid.rows], laid.version);
}

describe('log groups with laid-out events (format versions 3 and 4)', () => {
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
      assert.ok(versions.includes(3), `groups of versions ${versions.join(', ')}`);
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
    assert.equal(value[0], 3);
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
    const value = (entries: unknown[], rows: Buffer): Buffer => encodeStored([9, entries, layouts, table, rows], 3);
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

  it('a quote executed as it is made between internal accounts is two rows of a version 4 group, and reads the same after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'log-layout-payment-'));
    try {
      let svc = await startTestService({ dataDir });
      let quote: { id: string };
      try {
        const payer = await fundedCustomer(svc, 1_000_000);
        const payee = await fundedCustomer(svc, 0);
        quote = await createQuote(svc, quoteBody(payer.usd.id, payee.usd.id, 1_234, { immediatelyExecute: true }));
      } finally {
        await svc.stop({ keepData: true });
      }
      const root = open({ path: dataDir });
      const payments: Array<{ version: number; stored: unknown; events: Array<{ type: string }> }> = [];
      try {
        const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
        for (const { key, value } of log.getRange()) {
          const events = decodeGroup<{ type: string }>(key, value).flatMap((entry) => entry.events);
          const [, entries] = decodeStored(value, 'test') as [number, Array<[number, unknown[]]>];
          if (events.some((event) => event.type === 'quote.decided')) payments.push({ version: value[0]!, stored: entries.map(([, stored]) => stored), events });
        }
      } finally {
        await root.close();
      }
      assert.equal(payments.length, 1);
      // The entry's two events stand as their rows' numbers.
      assert.deepEqual(payments[0], { version: 4, stored: [[0, 1]], events: payments[0]!.events });
      assert.deepEqual(
        payments[0]!.events.map((event) => Object.keys(event)),
        [['type', ...QUOTE_DECIDED_LAYOUT.fields.map(([name]) => name)], ['type', 'quoteId']],
      );
      svc = await startTestService({ dataDir });
      try {
        assert.deepEqual(await getJson(svc, `/quotes/${quote.id}`), quote);
      } finally {
        await svc.stop({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('reads back ids, numbers and lists exactly as msgpack gives them, and writes version 3 while no layout needs 4', () => {
    const QUOTE = QUOTE_DECIDED_LAYOUT;
    const id = (n: number): Uint8Array => loggedId(newId('Quote', 1_795_798_453_485 + n), 'Quote') as Uint8Array;
    const quote = (amount: number, price: Array<string | number>): { type: string } & Record<string, unknown> => ({
      type: 'quote.decided',
      id: id(amount % 1000),
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: amount,
      price,
      sourceAccount: id(1),
      payeeAccount: id(2),
    });
    const numbers = [0, 1, 239, 240, 255, 65_535, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER, -1, 0.5, 1e-9, -(2 ** 40), Infinity, NaN];
    const entries: Array<[number, Array<{ type: string } & Record<string, unknown>>]> = numbers.map((amount, i) => [
      1_000 + i,
      [quote(amount, ['USD', 'MXN', amount, i, 17.25, 0.0001, 1, 1, 0, 0]), { type: 'payment.decided', quoteId: id(i) }],
    ]);
    // Not laid out: an id logged as its string, a field the layout does not have, a list of another item.
    entries.push([2_000, [{ ...quote(5, ['USD', 'USD', 5, 0, 5, 1, 1, 1, 0, 0]), sourceAccount: 'InternalAccount:not-a-uuid' }]]);
    entries.push([2_001, [{ ...quote(5, ['USD', 'USD', 5, 0, 5, 1, 1, 1, 0, 0]), description: 'rent' }]]);
    entries.push([2_002, [quote(5, ['USD', 'USD', 5, 0, 5, 1, 1, 1, 0, [0]] as Array<string | number>)]]);
    const laid = groupValue(40, entries, [OPENED, QUOTE, PAYMENT_DECIDED_LAYOUT]);
    const plain = groupValue(40, entries, []);
    assert.equal(laid[0], 4);
    assert.equal(plain[0], 2);
    assert.ok(laid.length < plain.length, `laid out ${laid.length} bytes, msgpack ${plain.length}`);
    const read = decodeGroup<Record<string, unknown>>(40, laid);
    assert.deepEqual(read, decodeGroup(40, plain));
    // msgpack writes -0 as 0; a row keeps its sign.
    const negativeZero = decodeGroup<Record<string, unknown>>(1, groupValue(1, [[1, [quote(-0, ['USD', 'USD', -0, 0, 0, 1, 1, 1, 0, 0])]]], [QUOTE]));
    assert.ok(Object.is(negativeZero[0]!.events[0]!.lockedCurrencyAmount, -0) && Object.is((negativeZero[0]!.events[0]!.price as number[])[2], -0));
    // The same layouts with only customers in the group: version 3, as before.
    const customer = { type: 'customer.opened', u: 'abc', e: 'Platform:p#sandbox', r: 'US', c: ['USD'] };
    assert.equal(groupValue(7, [[1, [customer]]], [OPENED, QUOTE, PAYMENT_DECIDED_LAYOUT])[0], 3);
  });

  it('refuses a version 3 group with a kind of version 4, and ids, numbers and lists that do not parse', () => {
    const layouts = [['payment.decided', ['quoteId'], 'u'], ['n', ['x'], 'n'], ['l', ['x'], 'l']];
    const table = ['USD', ['USD']];
    const value = (version: 3 | 4, rows: number[]): Buffer => encodeStored([9, [[5, [0]]], layouts, table, Buffer.from(rows)], version);
    const sixteen = Array.from({ length: 16 }, (_, i) => i);
    assert.deepEqual(decodeGroup(9, value(4, [0, ...sixteen]))[0]!.events, [{ type: 'payment.decided', quoteId: Buffer.from(sixteen) }]);
    assert.deepEqual(decodeGroup(9, value(4, [2, 2, 0xf2, 0, 0, 0xf0, 1, 0, 0, 0]))[0]!.events, [{ type: 'l', x: ['USD', 1] }]);
    const damaged: Array<[string, Buffer]> = [
      ['an id in a version 3 group', value(3, [0, ...sixteen])],
      ['an id cut short', value(4, [0, ...sixteen.slice(1)])],
      ['a number with an unknown tag', value(4, [1, 0xf3, 0, 0, 0, 0, 0, 0, 0, 0])],
      ['a uint32 cut short', value(4, [1, 0xf0, 1, 0])],
      ['a list longer than its row', value(4, [2, 3, 1, 2])],
      ['a list item naming a shared list', value(4, [2, 1, 0xf2, 1, 0])],
    ];
    for (const [what, bytes] of damaged) {
      assert.throws(() => decodeGroup(9, bytes), (err: unknown) => err instanceof StoreCorruptError && /log entry 9/.test(err.where), what);
    }
  });

  it('World lays out customer.opened with exactly the fields a customer created with the defaults is logged with', () => {
    const world = new World();
    assert.deepEqual(world.logLayouts, [OPENED, QUOTE_DECIDED_LAYOUT, PAYMENT_DECIDED_LAYOUT]);
    const at = Date.UTC(2026, 0, 2);
    const env = sandboxEnv(at);
    world.apply({ type: 'platform.env.created', env }, at);
    const [event] = decideCreateCustomer(env, { customerType: 'INDIVIDUAL' }, world.customers, at);
    assert.deepEqual(Object.keys(event!), ['type', ...OPENED.fields.map(([name]) => name)]);
  });
});
