// Log format versions 3 and 4: a commit group whose hot events are laid out in rows instead
// of msgpack maps. The state machine names the event types worth it and their fields
// (`EventLayout`); the writer lays out an event of such a type when it has exactly those
// fields and each fits its kind, and writes every other event as version 2 does. A group
// describes its own layouts, so any reader decodes it without the machine.
//
//   payload = msgpack [first, entries, layouts, table, rows]
//   entries: as version 2, a laid-out event standing as its row's number
//   layouts: [type, field names, field kinds] per layout used, a kind per field:
//            'a' ASCII text, 's' shared; from version 4 also 'u' id, 'n' number, 'l' list
//   table:   the group's shared values (environment ids, regions, currency lists), each once
//   rows:    per laid-out event: its layout (1 byte), then per field:
//            'a' length (1 byte) and the text's bytes;
//            's' its value's place in the table (2 bytes, little-endian);
//            'u' the id's 16 bytes (a logged UUID, ids.ts loggedId);
//            'n' a number (`writeNumber`: 1 byte below 0xf0, else a tag and 4 or 8 bytes);
//            'l' a count (1 byte), then per item a number, or 0xf2 and a shared string's place
//
// A group is version 4 when one of its layouts has a kind version 3 did not know, so a
// reader of version 3 refuses it instead of reading an id as a place in the table. The
// payment's entry is laid out (actors/quote.ts): msgpack writes each of its binary ids
// through its extension path at about 0.6 µs each, and a payment logs four.
//
// Decoding a row reads a few bytes and one short string; the table's strings are shared by
// every event of the group (so the applier hashes an environment id once per group, not per
// entry). 99,788 `customer.opened` entries decoded in a third of msgpack's CPU in a
// prototype (docs/bench.md, session 42).
import type { LaidOutVersion } from './format.js';
import type { EventLayout } from './state-machine.js';

/** The layouts, shared values and rows of one group, as the writer gathers them. */
export interface LaidOut {
  /** 3, or 4 when a layout has a kind version 3 did not know. */
  version: LaidOutVersion;
  layouts: Array<[type: string, names: string[], kinds: string]>;
  table: unknown[];
  rows: Buffer;
}

type FieldKind = EventLayout['fields'][number][1];
const KIND_CODE: Record<FieldKind, string> = { ascii: 'a', shared: 's', id: 'u', number: 'n', list: 'l' };
/** The most bytes a field of each kind takes in a row. */
const KIND_BYTES: Record<FieldKind, number> = { ascii: 256, shared: 2, id: 16, number: 9, list: 1 + 255 * 9 };
/** The kinds a version 3 group may hold; a layout with any other makes its group version 4. */
const VERSION_3_KINDS: ReadonlySet<FieldKind> = new Set(['ascii', 'shared']);
/** A layout's kind codes read back, for each version: the kinds it may hold, by code. */
const KINDS_BY_CODE: Record<LaidOutVersion, ReadonlyMap<string, FieldKind>> = {
  3: new Map(Object.entries(KIND_CODE).flatMap(([kind, code]) => (VERSION_3_KINDS.has(kind as FieldKind) ? [[code, kind as FieldKind]] : []))),
  4: new Map(Object.entries(KIND_CODE).map(([kind, code]) => [code, kind as FieldKind])),
};

/** A number's first byte: below it, the byte is the number; at it, 4 bytes of a uint32 follow; above, 8 of a float64. */
const NUMBER_UINT32 = 0xf0;
const NUMBER_FLOAT64 = 0xf1;
/** A list item's first byte when it is a shared string: its place in the table (2 bytes) follows. */
const ITEM_SHARED = 0xf2;

/** Lays out the events of a group that fit a layout; the others are left as they are. */
export class GroupLayout {
  readonly #byType: ReadonlyMap<string, EventLayout>;
  readonly #used = new Map<EventLayout, number>();
  readonly #layouts: LaidOut['layouts'] = [];
  readonly #table: unknown[] = [];
  /** Places in the table by value: strings by their text, lists by identity, then by their items (`#listIndex`). */
  readonly #tableIndex = new Map<string | readonly string[], number>();
  readonly #listIndex = new Map<string, number>();
  #rows = Buffer.alloc(0);
  #length = 0;
  #count = 0;
  #version: LaidOutVersion = 3;

  constructor(byType: ReadonlyMap<string, EventLayout>) {
    this.#byType = byType;
  }

  /** The event's row number if it was laid out, else the event itself. */
  place(event: { type: string }): unknown {
    const layout = this.#byType.get(event.type);
    if (layout === undefined || !fits(layout, event as unknown as Record<string, unknown>)) return event;
    const values = event as unknown as Record<string, unknown>;
    this.#reserve(rowBytes(layout));
    const rows = this.#rows;
    let at = this.#length;
    rows[at++] = this.#layoutNumber(layout);
    for (const [name, kind] of layout.fields) {
      const value = values[name];
      switch (kind) {
        case 'ascii': {
          const text = value as string;
          rows[at++] = text.length;
          at += rows.write(text, at, 'latin1');
          break;
        }
        case 'shared':
          at = rows.writeUInt16LE(this.#shared(value as string | readonly string[]), at);
          break;
        case 'id': {
          const bytes = value as Uint8Array;
          for (let i = 0; i < 16; i++) rows[at + i] = bytes[i]!;
          at += 16;
          break;
        }
        case 'number':
          at = writeNumber(rows, value as number, at);
          break;
        case 'list': {
          const items = value as ReadonlyArray<string | number>;
          rows[at++] = items.length;
          for (const item of items) {
            if (typeof item === 'number') at = writeNumber(rows, item, at);
            else {
              rows[at++] = ITEM_SHARED;
              at = rows.writeUInt16LE(this.#shared(item), at);
            }
          }
          break;
        }
      }
    }
    this.#length = at;
    return this.#count++;
  }

  /** What the group laid out, or undefined when no event fitted (the group is written as version 2). */
  done(): LaidOut | undefined {
    if (this.#count === 0) return undefined;
    return { version: this.#version, layouts: this.#layouts, table: this.#table, rows: this.#rows.subarray(0, this.#length) };
  }

  #layoutNumber(layout: EventLayout): number {
    let number = this.#used.get(layout);
    if (number === undefined) {
      number = this.#layouts.length;
      this.#used.set(layout, number);
      if (layout.fields.some(([, kind]) => !VERSION_3_KINDS.has(kind))) this.#version = 4;
      this.#layouts.push([layout.type, layout.fields.map(([name]) => name), layout.fields.map(([, kind]) => KIND_CODE[kind]).join('')]);
    }
    return number;
  }

  #shared(value: string | readonly string[]): number {
    let index = this.#tableIndex.get(value);
    if (index !== undefined) return index;
    // A list equal to one placed already (each decision may build its own): one place for both.
    const items = typeof value === 'string' ? undefined : value.join('\u0000');
    index = items === undefined ? undefined : this.#listIndex.get(items);
    if (index === undefined) {
      index = this.#table.length;
      this.#table.push(value);
      if (items !== undefined) this.#listIndex.set(items, index);
    }
    this.#tableIndex.set(value, index);
    return index;
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#rows.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#rows.length * 2, this.#length + bytes, 4096));
    this.#rows.copy(grown, 0, 0, this.#length);
    this.#rows = grown;
  }
}

/** The most bytes a row of `layout` takes, worked out once per layout. */
const ROW_BYTES = new WeakMap<EventLayout, number>();
function rowBytes(layout: EventLayout): number {
  let bytes = ROW_BYTES.get(layout);
  if (bytes === undefined) {
    bytes = 1;
    for (const [, kind] of layout.fields) bytes += KIND_BYTES[kind];
    ROW_BYTES.set(layout, bytes);
  }
  return bytes;
}

/**
 * Whether `event` has exactly the layout's fields (besides its type) and each fits its kind:
 * ASCII text of at most 255 characters; a string or list of strings shared through the table
 * (at most 65,536 of them a group); an id's 16 bytes; a number; a list of at most 255 numbers
 * and strings. Anything else is written as msgpack.
 */
function fits(layout: EventLayout, event: Record<string, unknown>): boolean {
  let keys = 0;
  for (const key in event) if (Object.hasOwn(event, key)) keys++;
  if (keys !== layout.fields.length + 1) return false;
  for (const [name, kind] of layout.fields) if (!fitsKind(kind, event[name])) return false;
  return true;
}

function fitsKind(kind: FieldKind, value: unknown): boolean {
  switch (kind) {
    case 'ascii':
      return isShortAscii(value);
    case 'shared':
      return isSharable(value);
    case 'id':
      return value instanceof Uint8Array && value.length === 16;
    case 'number':
      return typeof value === 'number';
    case 'list':
      return Array.isArray(value) && value.length <= 255 && value.every((item) => typeof item === 'number' || typeof item === 'string');
  }
}

function isShortAscii(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 255) return false;
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}

function isSharable(value: unknown): boolean {
  return typeof value === 'string' || (Array.isArray(value) && value.every((item) => typeof item === 'string'));
}

/** Writes `value` at `at`: a whole number below 0xf0 as its byte, one below 2^32 as a uint32, any other as a float64 (-0 and NaN kept). */
function writeNumber(rows: Buffer, value: number, at: number): number {
  if (value >>> 0 === value && !Object.is(value, -0)) {
    if (value < NUMBER_UINT32) {
      rows[at] = value;
      return at + 1;
    }
    rows[at] = NUMBER_UINT32;
    return rows.writeUInt32LE(value, at + 1);
  }
  rows[at] = NUMBER_FLOAT64;
  return rows.writeDoubleLE(value, at + 1);
}

/**
 * The events a group's rows stand for, in row order; throws (with what is wrong) on rows that
 * do not parse, or on a kind its group's version does not have, for the caller to report as
 * damage.
 */
export function readRows(version: LaidOutVersion, layouts: unknown, table: unknown, rows: unknown): unknown[] {
  if (!Array.isArray(layouts) || !Array.isArray(table) || !(rows instanceof Uint8Array)) throw new Error('not a laid-out group');
  const kindsByCode = KINDS_BY_CODE[version];
  const shapes = layouts.map((layout: unknown) => {
    if (!Array.isArray(layout) || typeof layout[0] !== 'string' || !Array.isArray(layout[1]) || typeof layout[2] !== 'string' || layout[1].length !== layout[2].length) {
      throw new Error('a layout that is not one');
    }
    const kinds = [...layout[2]].map((code) => kindsByCode.get(code));
    if (kinds.includes(undefined)) throw new Error(`a layout with kinds ${layout[2]}, which version ${version} does not have`);
    return { type: layout[0], names: layout[1] as string[], kinds: kinds as FieldKind[] };
  });
  const reader = new RowReader(Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength), table);
  const events: unknown[] = [];
  while (!reader.done()) {
    reader.row = events.length;
    const shape = shapes[reader.byte()];
    if (shape === undefined) throw new Error(`row ${events.length} names no layout`);
    const event: Record<string, unknown> = { type: shape.type };
    for (let f = 0; f < shape.names.length; f++) event[shape.names[f]!] = reader.field(shape.kinds[f]!);
    events.push(event);
  }
  return events;
}

/** Reads one group's rows field by field, refusing to run past them. */
class RowReader {
  /** The row being read, for the errors. */
  row = 0;
  #at = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly table: unknown[],
  ) {}

  done(): boolean {
    return this.#at >= this.bytes.length;
  }

  byte(): number {
    this.#need(1);
    return this.bytes[this.#at++]!;
  }

  /** A field of `kind`, as GroupLayout.place wrote it. */
  field(kind: FieldKind): unknown {
    switch (kind) {
      case 'ascii': {
        const length = this.byte();
        this.#need(length);
        return this.bytes.toString('latin1', this.#at, (this.#at += length));
      }
      case 'shared':
        return this.#shared();
      case 'id': {
        this.#need(16);
        // A copy: lmdb may reuse the buffer the group was read from.
        const id = Buffer.allocUnsafe(16);
        this.bytes.copy(id, 0, this.#at, (this.#at += 16));
        return id;
      }
      case 'number':
        return this.#number(this.byte());
      case 'list': {
        const items: Array<string | number> = [];
        for (let count = this.byte(); count > 0; count--) {
          const first = this.byte();
          items.push(first === ITEM_SHARED ? this.#sharedString() : this.#number(first));
        }
        return items;
      }
    }
  }

  #number(first: number): number {
    if (first < NUMBER_UINT32) return first;
    if (first === NUMBER_UINT32) {
      this.#need(4);
      const value = this.bytes.readUInt32LE(this.#at);
      this.#at += 4;
      return value;
    }
    if (first !== NUMBER_FLOAT64) throw new Error(`row ${this.row} has a number tagged ${first}`);
    this.#need(8);
    const value = this.bytes.readDoubleLE(this.#at);
    this.#at += 8;
    return value;
  }

  #shared(): unknown {
    this.#need(2);
    const value = this.table[this.bytes.readUInt16LE(this.#at)];
    if (value === undefined) throw new Error(`row ${this.row} names no shared value`);
    this.#at += 2;
    return value;
  }

  #sharedString(): string {
    const value = this.#shared();
    if (typeof value !== 'string') throw new Error(`row ${this.row} names a shared value that is not a string in a list`);
    return value;
  }

  #need(bytes: number): void {
    if (this.#at + bytes > this.bytes.length) throw new Error(`row ${this.row} runs past the rows`);
  }
}
