// A shard's replicated log: one JetStream stream, one message per commit group. A group is
// durable when JetStream acknowledges its publish, that is when a quorum of the stream's
// replicas holds it. Every publish expects the stream's last sequence to be the one before
// it, so only the writer that knows the stream's end can append: a deposed owner's publish
// is refused (FencedError) and the log never forks.
//
// A new owner trusts no stream state it was told until its own takeover marker lands: it
// publishes a marker expecting the last sequence it read, and only a stream leader that a
// quorum follows can acknowledge that. A server just restarted may answer a stream's info
// from its own replica, still behind (nats-server 2.9.10 did, in a run here: a new owner
// read one entry of 21 acknowledged ones); the marker's expectation fails against the real
// leader, and the owner reads again. It reads the log up to its marker, never past it.
//
// Publishes go out in waves: every group appended while a wave is in flight goes in the
// next one, pipelined. A publish that fails for a passing reason (no stream leader while
// the servers elect one, a timeout) is sent again, with the wave's later ones, under the
// same message id: JetStream drops a copy of a message it already holds (its duplicate
// window), before it checks the expected sequence, so a retry never appends twice.
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, JetStreamApiCodes, jetstreamManager, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';

/** Groups published at once, at most; later ones wait for the next wave. */
const MAX_WAVE = 256;
/** How long a passing failure may last (a leader election takes a few seconds) before the shard's log fails. */
const RETRY_FOR_MS = 30_000;
const RETRY_PAUSE_MS = 100;
const PUBLISH_TIMEOUT_MS = 5_000;
/** Longer than any retry, so a resent group is always recognised as a copy. */
const DUPLICATE_WINDOW_NS = 120e9;
/** Room left in a message for its headers and subject. */
const MESSAGE_OVERHEAD_BYTES = 1_024;
/** The header naming a message's first log entry (the local log's key for the group). */
export const FIRST_ENTRY_HEADER = 'Log-First-Entry';
/** The header of a takeover marker, naming the writer that took the stream over; it carries no log entry. */
export const TAKEOVER_HEADER = 'Log-Takeover';

/**
 * Every key-value bucket of cluster mode: one value per key, read through the stream's
 * leader (allow_direct off). A direct read may be served by a replica still catching up (a
 * server just restarted): an old snapshot pointer read as current sent a takeover to a
 * snapshot already removed.
 */
export const BUCKET_OPTIONS = { history: 1, allow_direct: false } as const;

/** Another writer appended to the shard's stream: this one no longer owns the shard. */
export class FencedError extends Error {
  constructor(readonly stream: string, reason: string) {
    super(`${stream}: this node may no longer append to the log (${reason}); it stops serving the shard`);
  }
}

interface Pending {
  data: Uint8Array;
  firstEntry: number;
  /** The stream sequence this group must land at. */
  seq: number;
  resolve: (seq: number) => void;
  reject: (err: Error) => void;
}

export interface StreamMessage {
  seq: number;
  firstEntry: number;
  data: Uint8Array;
}

export class ShardStream {
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #subject: string;
  /** Names this writer's messages apart from any other owner's (its ownership term). */
  readonly #writer: string;
  /** The stream sequence of the last group appended (acknowledged or not). */
  #lastSeq: number;
  /** Whether this node still holds the shard (its lease); checked before every publish. */
  readonly #holds: () => boolean;
  #queue: Pending[] = [];
  /** [first log entry, stream sequence] of the groups held since the last trim, in order. */
  #groups: Array<[number, number]> = [];
  /** Stream sequences of the takeover markers held since the last trim (this owner's last). */
  #markers: number[] = [];
  #pumping = false;
  #failure: Error | undefined;

  private constructor(
    js: JetStreamClient,
    jsm: JetStreamManager,
    readonly name: string,
    writer: string,
    lastSeq: number,
    holds: () => boolean,
    /** The largest commit group one message carries: the servers' max_payload less room for headers. */
    readonly maxGroupBytes: number,
  ) {
    this.#js = js;
    this.#jsm = jsm;
    this.#subject = subjectOf(name);
    this.#writer = writer;
    this.#lastSeq = lastSeq;
    this.#markers.push(lastSeq);
    this.#holds = holds;
  }

  /**
   * The shard's stream, created with `replicas` replicas if it does not exist; `writer` names
   * this ownership term (unique across terms: a lease revision and a node id); `holds` says
   * whether its lease still lets it write (default: always).
   */
  static async open(nc: NatsConnection, name: string, options: { replicas: number; writer: string; holds?: () => boolean }): Promise<ShardStream> {
    const jsm = await retrying(name, () => jetstreamManager(nc));
    const js = jetstream(nc);
    const holds = options.holds ?? (() => true);
    const marker = await takeOver(js, jsm, name, options, holds);
    const maxPayload = nc.info?.max_payload;
    if (maxPayload === undefined) throw new Error(`${name}: the NATS server did not say its max_payload`);
    return new ShardStream(js, jsm, name, options.writer, marker, holds, maxPayload - MESSAGE_OVERHEAD_BYTES);
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Resolves with the group's stream sequence once a quorum holds it; rejects with FencedError if another writer got there first. */
  append(data: Uint8Array, firstEntry: number): Promise<number> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const seq = ++this.#lastSeq;
    const done = new Promise<number>((resolve, reject) => this.#queue.push({ data, firstEntry, seq, resolve, reject }));
    if (!this.#pumping) void this.#pump();
    return done;
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    let failingSince: number | undefined;
    while (this.#queue.length > 0 && this.#failure === undefined) {
      const wave = this.#queue.slice(0, MAX_WAVE);
      const results = await Promise.allSettled(wave.map((p) => this.#publish(p)));
      let landed = 0;
      for (const result of results) {
        if (result.status === 'rejected') break;
        landed++;
      }
      for (const pending of this.#queue.splice(0, landed)) {
        this.#groups.push([pending.firstEntry, pending.seq]);
        pending.resolve(pending.seq);
      }
      if (landed === wave.length) {
        failingSince = undefined;
        continue;
      }
      const first = (results[landed] as PromiseRejectedResult).reason as unknown;
      // Only the first refused group tells: the ones after it expected it to have landed.
      if (first instanceof FencedError) {
        this.#fail(first);
        break;
      }
      if (isWrongLastSequence(first)) {
        this.#fail(new FencedError(this.name, `another owner appended: ${first.message}`));
        break;
      }
      failingSince ??= Date.now();
      if (Date.now() - failingSince > RETRY_FOR_MS) {
        this.#fail(new Error(`${this.name}: the log could not be replicated for ${RETRY_FOR_MS} ms (${first instanceof Error ? first.message : String(first)})`));
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
    }
    this.#pumping = false;
  }

  #publish(pending: Pending): Promise<void> {
    // Past its lease another node may own the shard already: not one more byte from here.
    if (!this.#holds()) return Promise.reject(new FencedError(this.name, 'its lease ran out'));
    const h = headers();
    h.set(FIRST_ENTRY_HEADER, String(pending.firstEntry));
    return this.#js
      .publish(this.#subject, pending.data, {
        msgID: `${this.#writer}:${pending.seq}`,
        expect: { lastSequence: pending.seq - 1 },
        headers: h,
        timeout: PUBLISH_TIMEOUT_MS,
      })
      .then((ack) => {
        if (ack.seq !== pending.seq) throw new FencedError(this.name, `a group landed at ${ack.seq}, not ${pending.seq}`);
      });
  }

  #fail(err: Error): void {
    this.#failure = err;
    const queue = this.#queue;
    this.#queue = [];
    for (const pending of queue) pending.reject(err);
  }

  /**
   * Removes the groups whose entries all come at or before log entry `seq` (a published
   * snapshot holds them): every message before the last group that starts at or before
   * `seq + 1`. Only while the lease holds; returns the messages removed.
   */
  async trimThrough(seq: number): Promise<number> {
    let keep = -1;
    for (let i = 0; i < this.#groups.length && this.#groups[i]![0] <= seq + 1; i++) keep = i;
    if (keep <= 0) return 0;
    // Takeover markers before the first group kept go with the groups (not counted: they hold no entry).
    const firstKept = this.#groups[keep]![1];
    const markers = this.#markers.filter((marker) => marker < firstKept);
    const removed = await deleteMessages(this.#jsm, this.name, this.#groups.slice(0, keep).map(([, streamSeq]) => streamSeq), this.#holds);
    this.#groups = this.#groups.slice(keep);
    await deleteMessages(this.#jsm, this.name, markers, this.#holds);
    this.#markers = this.#markers.filter((marker) => marker >= firstKept);
    return removed;
  }

  /** Every log group the stream holds before this owner's takeover marker, in order. */
  async *read(): AsyncGenerator<StreamMessage> {
    const marker = this.#markers.at(-1) ?? this.#lastSeq;
    const info = await retrying(this.name, () => this.#jsm.streams.info(this.name));
    // Only the first sequence is taken from the info (a replica behind has fewer deletes, so a first no later than the real one).
    const first = info.state.first_seq;
    if (first >= marker) return;
    const consumer = await retrying(this.name, () => this.#js.consumers.get(this.name, { opt_start_seq: first, deliver_policy: DeliverPolicy.StartSequence }));
    const messages = await consumer.consume();
    try {
      for await (const message of messages) {
        if (message.seq >= marker) break;
        if (message.headers?.has(TAKEOVER_HEADER) === true) {
          this.#markers.splice(this.#markers.length - 1, 0, message.seq);
          continue;
        }
        const firstEntry = Number(message.headers?.get(FIRST_ENTRY_HEADER));
        if (!Number.isSafeInteger(firstEntry)) throw new Error(`${this.name}: message ${message.seq} has no ${FIRST_ENTRY_HEADER} header`);
        this.#groups.push([firstEntry, message.seq]);
        yield { seq: message.seq, firstEntry, data: message.data };
        if (message.seq >= marker - 1) break;
      }
    } finally {
      await messages.close();
    }
  }
}

/** How long a takeover waits out another writer still appending (a deposed owner's last groups) or a server answering from behind. */
const TAKEOVER_FOR_MS = RETRY_FOR_MS;

/**
 * Creates the stream if there is none, then publishes this writer's takeover marker
 * expecting the last sequence the stream's info gave; the marker's sequence, once a quorum
 * holds it, is the stream's true end as this owner starts. A wrong expectation (an info
 * from a replica behind, or another writer's late group) reads the info again.
 */
async function takeOver(js: JetStreamClient, jsm: JetStreamManager, name: string, options: { replicas: number; writer: string }, holds: () => boolean): Promise<number> {
  const since = Date.now();
  for (;;) {
    const last = await retrying(name, () => lastSequenceOf(jsm, name, options.replicas));
    if (!holds()) throw new FencedError(name, 'its lease ran out before it took the stream over');
    const h = headers();
    h.set(TAKEOVER_HEADER, options.writer);
    try {
      const ack = await retrying(name, () => js.publish(subjectOf(name), new Uint8Array(0), { msgID: `${options.writer}:takeover`, expect: { lastSequence: last }, headers: h, timeout: PUBLISH_TIMEOUT_MS }));
      return ack.seq;
    } catch (err) {
      if (!isWrongLastSequence(err)) throw err;
      if (Date.now() - since > TAKEOVER_FOR_MS) throw new FencedError(name, `the stream kept moving for ${TAKEOVER_FOR_MS} ms while this owner took it over: ${err.message}`);
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
    }
  }
}

/** The stream's last sequence as its info says, the stream created (with `replicas` replicas) if there is none. */
async function lastSequenceOf(jsm: JetStreamManager, name: string, replicas: number): Promise<number> {
  try {
    return (await jsm.streams.info(name)).state.last_seq;
  } catch (err) {
    if (!(err instanceof JetStreamApiError) || err.code !== JetStreamApiCodes.StreamNotFound) throw err;
    const info = await jsm.streams.add({ name, subjects: [subjectOf(name)], num_replicas: replicas, duplicate_window: DUPLICATE_WINDOW_NS });
    return info.state.last_seq;
  }
}

/** Messages deleted at once by deleteMessages: enough to fill a round trip, few enough not to flood the stream's leader. */
const DELETES_IN_FLIGHT = 64;

/**
 * Deletes the messages at `seqs` from `stream`, one request each, while `allowed()` says so
 * (checked before every wave); returns how many were there to delete. Never a purge: the
 * nats-server Debian ships (2.9.10; fixed in 2.9.18, nats-server#4196) replays a purge up to
 * a sequence as a purge of the whole stream as it was then, when a restarted server catches
 * up, so its replica loses acknowledged messages. A deleted message replays as itself.
 */
export async function deleteMessages(jsm: JetStreamManager, stream: string, seqs: readonly number[], allowed: () => boolean = () => true): Promise<number> {
  let removed = 0;
  for (let at = 0; at < seqs.length; at += DELETES_IN_FLIGHT) {
    if (!allowed()) break;
    const wave = seqs.slice(at, at + DELETES_IN_FLIGHT);
    const results = await Promise.all(
      wave.map((seq) =>
        retrying(stream, async () => {
          try {
            return await jsm.streams.deleteMessage(stream, seq, false);
          } catch (err) {
            // Deleted already (an earlier try whose answer was lost).
            if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return false;
            throw err;
          }
        }),
      ),
    );
    removed += results.filter(Boolean).length;
  }
  return removed;
}

/**
 * JetStream refused a write that expected another last sequence: someone else appended
 * (a stream), or the key changed since it was read (a key-value compare-and-set).
 */
export function isWrongLastSequence(err: unknown): err is JetStreamApiError {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * `call` again while it fails for a passing reason (a timeout or no JetStream leader, as
 * while servers elect one, which the API may also answer with status 503), for at most
 * RETRY_FOR_MS; any other answer of the JetStream API is final.
 */
export async function retrying<T>(what: string, call: () => Promise<T>): Promise<T> {
  const since = Date.now();
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (err instanceof JetStreamApiError && err.status !== 503) throw err;
      if (Date.now() - since > RETRY_FOR_MS) throw new Error(`${what}: JetStream did not answer for ${RETRY_FOR_MS} ms (${err instanceof Error ? err.message : String(err)})`);
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
    }
  }
}

/**
 * The keys of a key-value bucket matching `filter` (a key with wildcards), read from the
 * bucket's stream's subjects. (The client's `keys()` stops early while keys are being
 * rewritten, as heartbeats are: a live node went missing from it.) Deleted keys are
 * included: their values say so.
 */
export async function bucketKeys(jsm: JetStreamManager, bucket: string, filter: string): Promise<string[]> {
  const prefix = `$KV.${bucket}.`;
  const info = await retrying(bucket, () => jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}${filter}` }));
  return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
}

/** Stream names allow letters, digits, '-' and '_'; the subject is the name under `shard.`. */
function subjectOf(name: string): string {
  return `shard.${name}.log`;
}
