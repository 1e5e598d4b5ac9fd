// The deterministic simulation: the whole service in this process, under a manual clock,
// simulated storage and one seed. Each step draws a few operations, hands them to the
// request path as data, and drives the service until they are answered: the event loop
// turns, the disk syncs some or all of what is pending, the clock moves. Faults come from
// the same seed: a crash at a random point of a step (what was not durable is lost, a
// prefix of it may survive), a bit flipped in a stored value, the platform's endpoint down.
// After every recovery and at the end the recovered state is checked against the model of
// acknowledged money (src/sim/model.ts) and the ledger invariant.
//
// Only microtasks and setImmediate run: no socket, file, thread or real timer, so the order
// of everything is the seed's, and a run's digest is the same on any machine.
import { createHash, type Hash } from 'node:crypto';
import { ManualClock } from '../engine/clock.js';
import { seededEntropy, systemEntropy, useEntropy } from '../engine/entropy.js';
import { StoreCorruptError } from '../engine/format.js';
import { isValidPrivateKey } from '../crypto/p256.js';
import { createPlatform, type PlatformCredentials } from '../platforms.js';
import { DomainError } from '../../actors/errors.js';
import { errorBody, statusOf } from '../http/errors.js';
import { API_VERSION, type Incoming } from '../http/requests.js';
import { routes as serviceRoutes } from '../http/routes/index.js';
import type { Route } from '../http/route.js';
import { SimulatedDisk } from './storage.js';
import { DEFAULT_MAX_PENDING_WEBHOOKS } from '../webhooks/delivery.js';
import { droppedReason } from '../../actors/webhook-event.js';
import { SimulatedEndpoint } from './endpoint.js';
import { simulatedService, type SimulatedService } from './service.js';
import { fundingKey, MoneyModel } from './model.js';
import { Rng, Weights } from './random.js';
import { envIdOf } from '../../actors/platform.js';
import { Workload } from './workload.js';
import { Json, type Operation, type SimRequest } from './operation.js';

export interface SimulationOptions {
  seed: number;
  ops: number;
  /** Chance per step of a crash somewhere in it. */
  crashRate: number;
  /** Chance per step of another fault: an endpoint outage, or a flipped bit met at the next recovery. */
  faultRate: number;
  /** The API's routes (default: the service's); a test swaps in a variant of one to see the simulation catch it. */
  routes?: readonly Route[];
  /**
   * The share of quotes, among those not from a wallet, created with `immediatelyExecute`
   * (default DEFAULT_IMMEDIATE_SHARE): their payments' transactions are derived from the quote.
   * 0 draws nothing for it, so a seed runs as it did before quotes were executed at once.
   */
  immediateShare?: number;
  /**
   * PENDING webhook events the platform's environment holds before its oldest are dropped
   * (default the service's, which no run reaches): a small cap makes a full backlog drop
   * events through crashes, faults and snapshots.
   */
  maxPendingWebhooks?: number;
}

export const DEFAULT_IMMEDIATE_SHARE = 0.3;

export interface Violation {
  step: number;
  message: string;
}

export interface SimulationResult {
  seed: number;
  ops: number;
  crashes: number;
  faults: number;
  digest: string;
  violation?: Violation;
  /** `dropped`: webhook events FAILED as dropped from a full backlog at the end. */
  stats: { entries: number; transactions: number; snapshots: number; simulatedMs: number; lost: number; flipsCaught: number; dropped: number };
}

/** Turns of the event loop a request may take before the simulation calls it hung. */
const MAX_TURNS = 20_000;
/**
 * Entries between snapshots: fewer than lie between two crashes at the default rate (about
 * 2,000), so most recoveries read a snapshot and a tail. The interval hardly changes a run's
 * cost: each snapshot writes what changed since the one before.
 */
const SNAPSHOT_EVERY_ENTRIES = 1_000;
const SNAPSHOT_EVERY_MS = 300_000;
/** Steps between checks of the whole model against the service. */
const CHECK_EVERY_STEPS = 500;
const START = Date.UTC(2026, 0, 1);
const FAULTS = new Weights({ outage: 2, flip: 1, snapshot: 1 });

class SimulationFailed extends Error {
  constructor(readonly violation: Violation) {
    super(violation.message);
  }
}

interface InFlight {
  op: Operation;
  life: SimulatedService;
  answer: { status: number; text: string } | undefined;
}

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const simulation = new Simulation(options);
  try {
    return await simulation.run();
  } finally {
    useEntropy(systemEntropy);
  }
}

class Simulation {
  readonly #options: SimulationOptions;
  readonly #maxPendingWebhooks: number;
  readonly #rng: Rng;
  readonly #disk = new SimulatedDisk();
  readonly #model = new MoneyModel();
  readonly #workload: Workload;
  readonly #endpoint: SimulatedEndpoint;
  readonly #digest: Hash = createHash('sha256');
  readonly #masterKey: Uint8Array;
  readonly #signerKey: Uint8Array;
  #clock = new ManualClock(START);
  #life!: SimulatedService;
  #credentials!: PlatformCredentials;
  #step = 0;
  #crashes = 0;
  #faults = 0;
  #flipsCaught = 0;
  #snapshots = 0;
  #requests = 0;
  /** A crash is due at this turn of the current step's drive (undefined: none this step). */
  #crashAtTurn: number | undefined;
  /** Whether it comes after that turn's sync (durable, unanswered) or before it (lost). */
  #crashAfterSync = false;
  /** Set by the engine's onFatal: memory got ahead of the log. */
  #fatal: string | undefined;
  /**
   * The life and log sequence at which the state's invariants were last checked and held:
   * by recovery (an engine opens only if they hold) or by `#check`. The state changes only by
   * the entries it applies, so the same life at the same sequence holds the same state.
   */
  #invariantsHeld: { life: SimulatedService; seq: number } | undefined;

  constructor(options: SimulationOptions) {
    this.#options = options;
    this.#maxPendingWebhooks = options.maxPendingWebhooks ?? DEFAULT_MAX_PENDING_WEBHOOKS;
    this.#rng = new Rng(options.seed);
    // The service's own draws (ids, keys, nonces) from a stream of their own.
    useEntropy(seededEntropy((options.seed ^ 0x5eed5eed) >>> 0));
    this.#workload = new Workload(this.#rng, this.#model, () => this.#clock.now(), options.immediateShare ?? DEFAULT_IMMEDIATE_SHARE);
    this.#endpoint = new SimulatedEndpoint(this.#rng, () => this.#clock.now(), (id) => this.#workload.awaitApproval(id));
    this.#masterKey = this.#rng.bytes(32);
    this.#signerKey = this.#rng.bytes(32, isValidPrivateKey);
  }

  async run(): Promise<SimulationResult> {
    let violation: Violation | undefined;
    try {
      await this.#boot();
      this.#credentials = await this.#drive(createPlatform(this.#life.services), 'creating the platform');
      for (this.#step = 1; this.#step <= this.#options.ops; ) await this.#runStep();
      await this.#quiesce();
      await this.#check('at the end');
      // Everything acknowledged is durable: one last crash and recovery must restore it exactly.
      this.#crash();
      await this.#recover([]);
      this.#digestState();
    } catch (err) {
      if (!(err instanceof SimulationFailed)) throw err;
      violation = err.violation;
    }
    return {
      seed: this.#options.seed,
      ops: Math.min(this.#step, this.#options.ops),
      crashes: this.#crashes,
      faults: this.#faults,
      digest: this.#digest.digest('hex'),
      ...(violation !== undefined ? { violation } : {}),
      stats: {
        entries: this.#life?.engine.lastSeq ?? 0,
        transactions: this.#model.transactions.size,
        snapshots: this.#snapshots,
        simulatedMs: this.#clock.now() - START,
        lost: this.#disk.stats.lost,
        flipsCaught: this.#flipsCaught,
        dropped: violation === undefined ? this.#droppedAtEnd() : 0,
      },
    };
  }

  /** The webhook events a full backlog FAILED as dropped, as the last life's state holds them. */
  #droppedAtEnd(): number {
    const reason = droppedReason(this.#maxPendingWebhooks);
    let dropped = 0;
    for (const [, event] of this.#life.services.world.webhookEvents.eachRecord()) if (event.deliveryStatus === 'FAILED' && event.failureReason === reason) dropped++;
    return dropped;
  }

  #fail(message: string): never {
    throw new SimulationFailed({ step: this.#step, message });
  }

  /** A new life of the service over the disk: recovery, checked, then delivery starts. */
  async #boot(): Promise<void> {
    this.#clock = new ManualClock(this.#clock.now());
    this.#fatal = undefined;
    /** The log sequence recovery replayed to and checked the invariants at (its report says). */
    let recoveredTo: number | undefined;
    const life = simulatedService({
      disk: this.#disk,
      clock: this.#clock,
      endpoint: this.#endpoint,
      masterKey: this.#masterKey,
      signerKey: this.#signerKey,
      snapshotEveryEntries: SNAPSHOT_EVERY_ENTRIES,
      snapshotEveryMs: SNAPSHOT_EVERY_MS,
      maxPendingWebhooks: this.#maxPendingWebhooks,
      routes: this.#options.routes ?? serviceRoutes,
      report: (_message, fields) => {
        if (fields.event === 'snapshot.written') this.#snapshots++;
        if (fields.event === 'recovery.done') recoveredTo = (fields.snapshotSeq as number) + (fields.replayed as number);
        if (fields.level === 'error' || fields.level === 'fatal') this.#fail(`the service reported: ${_message}`);
      },
      onFatal: (what, err) => {
        this.#fatal = `${what}: ${err.message}`;
      },
    });
    this.#life = life;
    await this.#drive(life.open(), 'recovery');
    // Recovery checked the invariants of what it recovered (the open fails otherwise), at the
    // sequence it replayed to; timers it resumed may have applied entries since.
    if (recoveredTo !== undefined) this.#invariantsHeld = { life, seq: recoveredTo };
    life.start();
  }

  async #runStep(): Promise<void> {
    const batch: Operation[] = [];
    const size = 1 + this.#rng.int(3);
    for (let i = 0; i < size && this.#step + i <= this.#options.ops; i++) batch.push(this.#workload.next());
    this.#crashAtTurn = this.#rng.chance(this.#options.crashRate) ? this.#rng.int(12) : undefined;
    this.#crashAfterSync = this.#rng.chance(0.5);
    if (this.#rng.chance(this.#options.faultRate)) this.#fault();
    const unanswered = await this.#send(batch);
    this.#step += batch.length;
    if (unanswered !== undefined) await this.#recover(unanswered);
    if (this.#rng.chance(0.03)) await this.#elapse(this.#rng.between(1_000, 400_000));
    else this.#clock.advance(this.#rng.int(200));
    if (this.#step % CHECK_EVERY_STEPS < batch.length) await this.#check(`after step ${this.#step}`);
  }

  /**
   * A fault: the platform's endpoint stops answering for a while (webhooks back off and
   * probe); a stored value starts reading back with a bit flipped (the next recovery meets
   * it); or a snapshot starts and a crash comes while it is written.
   */
  #fault(): void {
    switch (this.#rng.weighted(FAULTS)) {
      case 'outage':
        this.#endpoint.downUntil = this.#clock.now() + this.#rng.between(1_000, 120_000);
        break;
      case 'flip':
        if (!this.#flipBit()) return;
        break;
      case 'snapshot':
        // Its failure, if the crash cuts it short, is the dead process's.
        this.#life.services.engine.snapshot().catch(() => undefined);
        this.#crashAtTurn = this.#rng.int(4);
        break;
    }
    this.#faults++;
  }

  /**
   * Sends the operations at once and drives the service until each is answered, or the
   * step's crash comes first: then returns the operations it left unanswered (the service
   * is down until `#recover`).
   */
  async #send(batch: readonly Operation[]): Promise<Operation[] | undefined> {
    const inFlight = batch.map((op) => this.#issue(op));
    for (let turns = 0; inFlight.some((f) => f.answer === undefined); turns++) {
      await turn();
      const crashing = turns === this.#crashAtTurn;
      // Between a turn and the sync: what the turn wrote is not durable yet.
      if (crashing && !this.#crashAfterSync) return this.#crashInFlight(inFlight);
      if (turns > MAX_TURNS) this.#fail(`no answer to ${inFlight.filter((f) => f.answer === undefined).map((f) => f.op.label).join(', ')} after ${MAX_TURNS} turns`);
      this.#tick();
      // Right after the sync: what it made durable is there, but no answer to it has left.
      if (crashing) return this.#crashInFlight(inFlight);
    }
    for (const flight of inFlight) this.#answered(flight.op, flight.answer!);
    if (this.#crashAtTurn !== undefined) {
      // The crash falls after the answers: what they acknowledged must survive it.
      this.#crashAtTurn = undefined;
      this.#crash();
      await this.#recover([]);
    }
    return undefined;
  }

  /** The crash of a step: what was answered before it was acknowledged (it must survive); the rest is left unanswered. */
  #crashInFlight(inFlight: readonly InFlight[]): Operation[] {
    this.#crashAtTurn = undefined;
    this.#crash();
    for (const flight of inFlight) if (flight.answer !== undefined) this.#answered(flight.op, flight.answer);
    return inFlight.filter((f) => f.answer === undefined).map((f) => f.op);
  }

  /** After a turn of the event loop: the disk syncs some or all of what is pending, and the clock may move. */
  #tick(): void {
    if (this.#fatal !== undefined) this.#fail(`the engine stopped: ${this.#fatal}`);
    const pending = this.#disk.pendingCount;
    if (pending > 0) this.#disk.sync(this.#rng.chance(0.8) ? pending : this.#rng.int(pending + 1));
    if (this.#rng.chance(0.1)) this.#clock.advance(this.#rng.int(20));
  }

  #issue(op: Operation): InFlight {
    const life = this.#life;
    const flight: InFlight = { op, life, answer: undefined };
    const { incoming, raw } = this.#incoming(op.request);
    const requestId = `sim-${++this.#requests}`;
    const answer = (async () => {
      const prepared = life.requests.prepare(incoming);
      return life.requests.handle(prepared, incoming, raw, requestId);
    })();
    answer.then(
      (answered) => {
        if (this.#life === life) flight.answer = { status: answered.status, text: answered.body };
      },
      (err: unknown) => {
        if (this.#life !== life) return;
        if (err instanceof DomainError) {
          flight.answer = { status: statusOf(err), text: JSON.stringify(errorBody(err, requestId)) };
          return;
        }
        const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
        flight.answer = { status: 500, text: JSON.stringify({ code: 'INTERNAL_ERROR', message }) };
      },
    );
    return flight;
  }

  #incoming(request: SimRequest): { incoming: Incoming; raw: Buffer | undefined } {
    const raw = request.raw !== undefined ? Buffer.from(request.raw) : request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
    const headers: Incoming['headers'] = {};
    const key = request.headers?.['idempotency-key'];
    if (key !== undefined) headers.idempotencyKey = key;
    const walletRequestId = request.headers?.['request-id'];
    if (walletRequestId !== undefined) headers.requestId = walletRequestId;
    const signature = request.headers?.['service-wallet-signature'];
    if (signature !== undefined) headers.walletSignature = signature;
    return {
      incoming: {
        method: request.method,
        path: `/${API_VERSION}${request.path}`,
        query: request.query ?? '',
        authorization: this.#authorization(request.auth),
        contentType: raw === undefined ? '' : 'application/json',
        contentLength: raw === undefined ? '' : String(raw.length),
        headers,
      },
      raw,
    };
  }

  #authorization(auth: SimRequest['auth']): string {
    if (auth === 'wrong') return `Basic ${Buffer.from('tok_sbx_nobody:sk_wrong').toString('base64')}`;
    const token = this.#credentials[auth];
    return `Basic ${Buffer.from(`${token.tokenId}:${token.clientSecret}`).toString('base64')}`;
  }

  /** What an answer says: checked against what the operation allows, taught to the model, added to the digest. */
  #answered(op: Operation, answer: { status: number; text: string }): void {
    this.#digest.update(`${op.label}\n${answer.status}\n${answer.text}\n`);
    let body: Json;
    try {
      body = new Json(answer.text === '' ? {} : JSON.parse(answer.text));
    } catch {
      this.#fail(`${op.label}: the answer is not JSON: ${answer.text.slice(0, 200)}`);
    }
    if (answer.status >= 500 && body.text('code') !== 'SIMULATED_ERROR') this.#fail(`${op.label}: ${answer.status} ${answer.text.slice(0, 2000)}`);
    if (op.refused === true && (answer.status < 400 || answer.status >= 500)) this.#fail(`${op.label}: answered ${answer.status}, not refused`);
    let problem: string | undefined;
    try {
      problem = op.answered(answer.status, body);
    } catch (err) {
      problem = err instanceof Error ? err.message : String(err);
    }
    if (problem !== undefined) this.#fail(`${op.label}: ${problem}: ${answer.text.slice(0, 500)}`);
  }

  /** The power goes: the service's memory is gone; the disk keeps what was durable and maybe a prefix of the rest. */
  #crash(): void {
    this.#crashes++;
    this.#life.halt();
    const pending = this.#disk.pendingCount;
    this.#disk.crash(pending > 0 && this.#rng.chance(0.5) ? this.#rng.int(pending + 1) : 0);
  }

  /** A stored value will read back with one bit flipped: recovery must refuse it if it reads it. */
  #flipBit(): boolean {
    return this.#disk.flipBit(this.#rng.pick(['log', 'snapshots']), this.#rng.word(), this.#rng.word());
  }

  /**
   * Restarts after a crash and sends again (same key, same body) what the crash left
   * unanswered, until those are answered (a crash may come again meanwhile); then checks the
   * recovered state, in which what was unacknowledged is now either wholly there or not at all.
   */
  async #recover(unanswered: readonly Operation[]): Promise<void> {
    for (const op of unanswered) if (!op.retry) op.unanswered?.();
    let again: Operation[] | undefined = unanswered.filter((op) => op.retry);
    while (again !== undefined) {
      await this.#restart();
      again = again.length === 0 ? undefined : (await this.#send(again))?.filter((op) => op.retry);
    }
    await this.#check(`after crash ${this.#crashes}`);
  }

  /** Boots the service over the disk; a flipped bit recovery reads must be refused, then it is repaired and the boot tried again. */
  async #restart(): Promise<void> {
    for (;;) {
      try {
        await this.#boot();
        break;
      } catch (err) {
        if (err instanceof SimulationFailed) throw err;
        const served = this.#disk.repair();
        if (!(err instanceof StoreCorruptError) || !served) this.#fail(`recovery failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        // Refused, as it must be: the operator restores the value (a replica's copy) and starts again.
        this.#flipsCaught++;
      }
    }
    if (this.#disk.repair()) this.#fail('recovery served a value with a flipped bit instead of refusing it');
  }

  /** Time passes in steps (timers fire, webhooks retry), the service driven between them. */
  async #elapse(ms: number): Promise<void> {
    const end = this.#clock.now() + ms;
    while (this.#clock.now() < end) {
      this.#clock.advance(Math.min(end - this.#clock.now(), this.#rng.between(200, 5_000)));
      await this.#settle();
    }
  }

  /** Drives the service until the disk has had nothing to sync for a few turns. */
  async #settle(): Promise<void> {
    let quiet = 0;
    for (let turns = 0; quiet < 4; turns++) {
      if (turns > MAX_TURNS) this.#fail(`the service did not settle after ${MAX_TURNS} turns`);
      await turn();
      if (this.#fatal !== undefined) this.#fail(`the engine stopped: ${this.#fatal}`);
      if (this.#disk.pendingCount === 0) quiet++;
      else {
        quiet = 0;
        this.#disk.sync();
      }
    }
  }

  /** Drives the service until `promise` settles. */
  async #drive<T>(promise: Promise<T>, what: string): Promise<T> {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    promise.then(
      (value) => (outcome = { ok: true, value }),
      (error: unknown) => (outcome = { ok: false, error }),
    );
    for (let turns = 0; outcome === undefined; turns++) {
      if (turns > MAX_TURNS) this.#fail(`${what} did not finish after ${MAX_TURNS} turns`);
      await turn();
      this.#disk.sync();
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  /** Lets every timer that can fire fire: ten simulated minutes, the endpoint up. */
  async #quiesce(): Promise<void> {
    this.#endpoint.downUntil = 0;
    await this.#elapse(600_000);
  }

  /**
   * The recovered (or running) state against the model: the ledger invariant, every
   * acknowledged transaction there with a status that never went back, every balance what
   * the acknowledged money adds up to and never negative, and no transaction nobody asked for.
   */
  async #check(when: string): Promise<void> {
    // Timers that fell due while the service was down fire now.
    this.#clock.advance(0);
    await this.#settle();
    const { world } = this.#life.services;
    const seq = this.#life.engine.lastSeq;
    // Not again on a state already found whole (about half the checks after a crash find no entry since the recovery's).
    if (this.#invariantsHeld?.life !== this.#life || this.#invariantsHeld.seq !== seq) {
      const invariants = world.checkInvariants();
      if (invariants.length > 0) this.#fail(`${when}: ${invariants.join('; ')}`);
      this.#invariantsHeld = { life: this.#life, seq };
    }
    for (const tx of this.#model.transactions.values()) {
      const stored = world.transactions.get(tx.id);
      if (stored === undefined) this.#fail(`${when}: acknowledged transaction ${tx.id} (${tx.kind}) is gone`);
      const problem = this.#model.observe(tx.id, stored.status);
      if (problem !== undefined) this.#fail(`${when}: ${problem}`);
    }
    // Every transaction there was answered to someone (requests a crash left unanswered were sent again first).
    const sandbox = envIdOf(this.#credentials.platformId, 'sandbox');
    const fundings = new Map<string, number>();
    for (const id of world.transactions.idsIn(sandbox)) {
      if (this.#model.transactions.has(id)) continue;
      const tx = world.transactions.get(id)!;
      if (tx.source.sourceType === 'SANDBOX_FUNDING') {
        const key = fundingKey(tx.accountId, tx.receivedAmount);
        fundings.set(key, (fundings.get(key) ?? 0) + 1);
        continue;
      }
      // The credit side of a payment between internal accounts: the same quote's, the amount it promised.
      const payment = this.#model.internalPaymentOf(tx.quoteId);
      if (payment !== undefined && tx.type === 'INCOMING' && tx.accountId === payment.destination && tx.receivedAmount === payment.credit) continue;
      this.#fail(`${when}: transaction ${id} (${tx.type} ${tx.status} ${tx.receivedAmount} on ${tx.accountId}) was never acknowledged to anyone (quote ${tx.quoteId || "none"}, source ${tx.source.sourceType})`);
    }
    // Each acknowledged funding is there once: none lost, none applied twice.
    const compareFunding = (key: string): void => {
      const found = fundings.get(key) ?? 0;
      const acknowledged = this.#model.fundings.get(key) ?? 0;
      if (found !== acknowledged) this.#fail(`${when}: funding ${key} is there ${found} times, acknowledged ${acknowledged} times`);
    };
    // Every key of either side, without a set of both built at each check.
    for (const key of fundings.keys()) compareFunding(key);
    for (const key of this.#model.fundings.keys()) if (!fundings.has(key)) compareFunding(key);
    for (const [accountId, expected] of this.#model.expectedBalances()) {
      const stored = world.internalAccounts.get(accountId);
      if (stored === undefined) this.#fail(`${when}: account ${accountId} is gone`);
      if (stored.balance < 0) this.#fail(`${when}: account ${accountId} has a negative balance ${stored.balance}`);
      if (stored.balance !== expected) {
        this.#fail(`${when}: account ${accountId} (${this.#model.accounts.get(accountId)!.currency}) holds ${stored.balance}, the acknowledged money adds up to ${expected}`);
      }
    }
    const now = this.#clock.now();
    const wallets = this.#workload.wallets.check(world.wallets, now);
    if (wallets !== undefined) this.#fail(`${when}: ${wallets}`);
    // Every durable timer due by now fired (after a recovery too): quote expiry, sandbox outcomes, session and request expiry.
    const overdue = this.#life.services.engine.earliestTimerDue();
    if (overdue !== undefined && overdue <= now) this.#fail(`${when}: a timer due at ${new Date(overdue).toISOString()} has not fired by ${new Date(now).toISOString()}`);
  }

  /** The end state: every known account's balance and every known transaction's status, in order. */
  #digestState(): void {
    const { world } = this.#life.services;
    for (const account of this.#model.accounts.values()) this.#digest.update(`${account.id} ${world.internalAccounts.get(account.id)?.balance}\n`);
    for (const tx of this.#model.transactions.values()) this.#digest.update(`${tx.id} ${world.transactions.get(tx.id)?.status}\n`);
    this.#digest.update(`entries ${this.#life.services.engine.lastSeq}\n`);
  }
}
