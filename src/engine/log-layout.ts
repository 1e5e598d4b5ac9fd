// Log format version 3: a commit group whose hot events are laid out in rows instead of
// msgpack maps. The state machine names the event types worth it and their fields
// (`EventLayout`); the writer lays out an event of such a type when it has exactly those
// fields and each fits its kind, and writes every other event as version 2 does. A group
// describes its own layouts, so any reader decodes it without the machine.
//
//   payload = msgpack [first, entries, layouts, table, rows]
//   entries: as version 2, a laid-out event standing as its row's number
//   layouts: [type, field names, field kinds] per layout used ('a' ASCII text, 's' shared)
//   table:   the group's shared values (environment ids, regions, currency lists), each once
//   rows:    per laid-out event: its layout (1 byte), then per field: 'a' length (1 byte) and
//            the text's bytes, 's' its value's place in the table (2 bytes, little-endian)
//
// Decoding a row reads a few bytes and one short string; the table's strings are shared by
// every event of the group (so the applier hashes an environment id once per group, not per
// entry). 99,788 `customer.opened` entries decoded in a third of msgpack's CPU in a
// prototype (docs/bench.md, session 42).
import type { EventLayout } from './state-machine.js';

/** The layouts, shared values and rows of one group, as the writer gathers them. */
export interface LaidOut {
  layouts: Array<[type: string, names: string[], kinds: string]>;
  table: unknown[];
  rows: Buffer;
}

type FieldKind = EventLayout['fields'][number][1];
const KIND_CODE: Record<FieldKind, string> = { ascii: 'a', shared: 's' };

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

  constructor(byType: ReadonlyMap<string, EventLayout>) {
    this.#byType = byType;
  }

  /** The event's row number if it was laid out, else the event itself. */
  place(event: { type: string }): unknown {
    const layout = this.#byType.get(event.type);
    if (layout === undefined || !fits(layout, event as unknown as Record<string, unknown>)) return event;
    const values = event as unknown as Record<string, unknown>;
    this.#reserve(1 + layout.fields.length * 256);
    let at = this.#length;
    this.#rows[at++] = this.#layoutNumber(layout);
    for (const [name, kind] of layout.fields) {
      const value = values[name];
      if (kind === 'ascii') {
        const text = value as string;
        this.#rows[at++] = text.length;
        at += this.#rows.write(text, at, 'latin1');
      } else {
        this.#rows.writeUInt16LE(this.#shared(value as string | readonly string[]), at);
        at += 2;
      }
    }
    this.#length = at;
    return this.#count++;
  }

  /** What the group laid out, or undefined when no event fitted (the group is written as version 2). */
  done(): LaidOut | undefined {
    if (this.#count === 0) return undefined;
    return { layouts: this.#layouts, table: this.#table, rows: this.#rows.subarray(0, this.#length) };
  }

  #layoutNumber(layout: EventLayout): number {
    let number = this.#used.get(layout);
    if (number === undefined) {
      number = this.#layouts.length;
      this.#used.set(layout, number);
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

/**
 * Whether `event` has exactly the layout's fields (besides its type) and each fits its kind:
 * ASCII text of at most 255 characters, or a string or list of strings shared through the
 * table (at most 65,536 of them a group). Anything else is written as msgpack.
 */
function fits(layout: EventLayout, event: Record<string, unknown>): boolean {
  let keys = 0;
  for (const key in event) if (Object.hasOwn(event, key)) keys++;
  if (keys !== layout.fields.length + 1) return false;
  for (const [name, kind] of layout.fields) {
    const value = event[name];
    if (kind === 'ascii' ? !isShortAscii(value) : !isSharable(value)) return false;
  }
  return true;
}

function isShortAscii(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 255) return false;
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}

function isSharable(value: unknown): boolean {
  return typeof value === 'string' || (Array.isArray(value) && value.every((item) => typeof item === 'string'));
}

/**
 * The events a group's rows stand for, in row order; throws (with what is wrong) on rows that
 * do not parse, for the caller to report as damage.
 */
export function readRows(layouts: unknown, table: unknown, rows: unknown): unknown[] {
  if (!Array.isArray(layouts) || !Array.isArray(table) || !(rows instanceof Uint8Array)) throw new Error('not a laid-out group');
  const shapes = layouts.map((layout: unknown) => {
    if (!Array.isArray(layout) || typeof layout[0] !== 'string' || !Array.isArray(layout[1]) || typeof layout[2] !== 'string' || layout[1].length !== layout[2].length) {
      throw new Error('a layout that is not one');
    }
    return { type: layout[0], names: layout[1] as string[], kinds: layout[2] };
  });
  const bytes = Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength);
  const events: unknown[] = [];
  let at = 0;
  while (at < bytes.length) {
    const shape = shapes[bytes[at++]!];
    if (shape === undefined) throw new Error(`row ${events.length} names no layout`);
    const event: Record<string, unknown> = { type: shape.type };
    for (let f = 0; f < shape.names.length; f++) {
      if (shape.kinds.charCodeAt(f) === 0x61) {
        const length = bytes[at++]!;
        if (at + length > bytes.length) throw new Error(`row ${events.length} runs past the rows`);
        event[shape.names[f]!] = bytes.toString('latin1', at, (at += length));
      } else {
        if (at + 2 > bytes.length) throw new Error(`row ${events.length} runs past the rows`);
        const value = table[bytes.readUInt16LE(at)];
        if (value === undefined) throw new Error(`row ${events.length} names no shared value`);
        event[shape.names[f]!] = value;
        at += 2;
      }
    }
    events.push(event);
  }
  return events;
}
