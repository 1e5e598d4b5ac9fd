// A cluster node's ownership loop. Every third of a lease a pulse renews the leases it holds
// and says it is alive, on its own timer so that no slow turn delays it; and a turn reads the
// live nodes and deals the deployment's fixed shards over them (assignShards). A turn hands
// over the shards dealt to another node (final commit, then the lease released), and takes
// the leases of the ones dealt to it that nobody holds, then opens them. A shard whose lease cannot be renewed, or
// whose log fails, is dropped at once. A request runs on a shard open here while its lease
// holds; any other is sent on the shard's subject, which its owner answers (front.ts).
import { retrying } from './shard-stream.js';
import type { Report } from '../engine/report.js';
import type { Directory } from './directory.js';
import type { Lease, LeaseTable } from './lease.js';
import { assignShards, type Membership, type NodeInfo } from './membership.js';
import { ClusterShard, type NodeParts } from './shard.js';
import type { Backlogs } from '../ops/metrics.js';

export class ClusterNode {
  readonly #parts: NodeParts;
  readonly #directory: Directory;
  readonly #membership: Membership;
  readonly #leases: LeaseTable;
  readonly #leaseMs: number;
  readonly #report: Report;
  /** Leases held, opening or serving. */
  readonly #held = new Map<string, Lease>();
  /** Shards open and serving. */
  readonly #serving = new Map<string, ClusterShard>();
  /** Shards being opened or closed (never touched twice at once). */
  readonly #busy = new Set<string>();
  #assignment = new Map<string, string>();
  #nodes = new Map<string, NodeInfo>();
  #timer: NodeJS.Timeout | undefined;
  #pulseTimer: NodeJS.Timeout | undefined;
  #pulsing = false;
  #ticking: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(parts: NodeParts, directory: Directory, membership: Membership, leaseMs: number) {
    this.#parts = parts;
    this.#directory = directory;
    this.#membership = membership;
    this.#leases = parts.leases;
    this.#leaseMs = leaseMs;
    this.#report = parts.report;
  }

  get nodeId(): string {
    return this.#parts.nodeId;
  }

  /** The shards open here, by name. */
  get owned(): string[] {
    return [...this.#serving.keys()].sort();
  }

  /** The backlogs of the shards open here, added up (the node's metrics read them when scraped). */
  get backlogs(): Backlogs {
    const sum = (read: (shard: ClusterShard) => number) => (): number => [...this.#serving.values()].reduce((total, shard) => total + read(shard), 0);
    return {
      webhookEventsPending: sum((shard) => shard.services.webhooks.stats().pending),
      effectsPending: sum((shard) => shard.services.engine.pendingEffects),
      timersPending: sum((shard) => shard.services.engine.pendingTimers),
    };
  }

  /** The live nodes, by id, as of the last turn. */
  get nodes(): string[] {
    return [...this.#nodes.keys()].sort();
  }

  /** Says it is alive, runs the first turn, then pulses and turns every third of a lease. */
  async start(): Promise<void> {
    // Servers just restarted may not serve JetStream yet: the first heartbeat waits for them.
    await retrying('heartbeat', () => this.#membership.heartbeat());
    this.#pulseTimer = setInterval(() => void this.#pulse(), this.#leaseMs / 3);
    await this.poke();
  }

  /** Renews the leases and the heartbeat; skipped while the last pulse is still out. */
  async #pulse(): Promise<void> {
    if (this.#pulsing || this.#stopped) return;
    this.#pulsing = true;
    try {
      await Promise.all([
        this.#renew(),
        this.#membership.heartbeat().catch((err: unknown) => {
          this.#report(`cluster: heartbeat failed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.heartbeat.failed', level: 'warn' });
        }),
      ]);
    } finally {
      this.#pulsing = false;
    }
  }

  /** Runs a turn now (or right after the one running); resolves when it is done. */
  poke(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#ticking !== undefined) {
      this.#again = true;
      return this.#ticking;
    }
    clearTimeout(this.#timer);
    this.#ticking = this.#turn()
      .catch((err: unknown) => {
        this.#report(`cluster: turn failed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.turn.failed', level: 'warn', error: String(err) });
      })
      .finally(() => {
        this.#ticking = undefined;
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          void this.poke();
        } else {
          this.#timer = setTimeout(() => void this.poke(), this.#leaseMs / 3);
        }
      });
    return this.#ticking;
  }

  /** The shard open here while its lease holds; undefined when its requests are for another node. */
  serving(shard: string): ClusterShard | undefined {
    const open = this.#serving.get(shard);
    if (open !== undefined && !open.lost && this.#leases.holds(open.lease)) return open;
    if (open !== undefined) void this.poke();
    return undefined;
  }

  /** Whether some node holds a lease on each of `shards` (a new platform is served once they do). */
  async held(shards: readonly string[]): Promise<boolean> {
    for (const shard of shards) if ((await this.#leases.holder(shard)) === undefined) return false;
    return true;
  }

  async #turn(): Promise<void> {
    this.#nodes = await this.#membership.live();
    // This node counts itself in whatever the bucket said (its heartbeat may lag a read).
    this.#assignment = assignShards(this.#directory.placement.shards, [...this.#nodes.keys(), this.nodeId]);
    const handovers: Array<Promise<void>> = [];
    for (const [name, shard] of this.#serving) {
      if (this.#assignment.get(name) !== this.nodeId && !this.#busy.has(name)) handovers.push(this.#handOver(shard));
    }
    await Promise.all(handovers);
    for (const [name, owner] of this.#assignment) {
      if (owner !== this.nodeId || this.#held.has(name) || this.#busy.has(name)) continue;
      const lease = await this.#leases.acquire(name);
      if (lease !== undefined) this.#take(name, lease);
    }
  }

  /** Renews every held lease at once; a lease lost, or past its time, drops its shard. */
  async #renew(): Promise<void> {
    await Promise.all(
      [...this.#held].map(async ([name, lease]) => {
        let renewed: boolean;
        try {
          renewed = await this.#leases.renew(lease);
        } catch (err) {
          // No answer this time: the lease may still hold until its time is up.
          renewed = this.#leases.holds(lease);
          this.#report(`cluster: ${name}: lease renewal failed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.lease.renewal-failed', level: 'warn', shard: name });
        }
        if (!renewed) this.#drop(name, new Error('its lease was lost'));
      }),
    );
  }

  /** Opens a shard whose lease this node just took. */
  #take(name: string, lease: Lease): void {
    this.#held.set(name, lease);
    this.#busy.add(name);
    void (async () => {
      try {
        const shard = await ClusterShard.open(this.#parts, this.#directory, name, lease, (lost, err) => this.#drop(lost.name, err));
        if (this.#held.get(name) !== lease || this.#stopped) {
          await shard.close();
          return;
        }
        this.#serving.set(name, shard);
        this.#report(`cluster: serving ${name} (term ${lease.term})`, { event: 'cluster.shard.opened', shard: name, term: lease.term });
      } catch (err) {
        this.#report(`cluster: ${name} could not be opened: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.shard.open-failed', level: 'error', shard: name });
        if (this.#held.get(name) === lease) {
          this.#held.delete(name);
          await this.#unless(this.#leases.release(lease), `releasing ${name}'s lease`);
        }
      } finally {
        this.#busy.delete(name);
      }
    })();
  }

  /** Gives a shard to the node it is now dealt to: final commit, then the lease released. */
  async #handOver(shard: ClusterShard): Promise<void> {
    this.#busy.add(shard.name);
    this.#serving.delete(shard.name);
    try {
      await shard.close();
    } finally {
      this.#held.delete(shard.name);
      await this.#unless(this.#leases.release(shard.lease), `releasing ${shard.name}'s lease`);
      this.#busy.delete(shard.name);
    }
    this.#report(`cluster: handed ${shard.name} over`, { event: 'cluster.shard.handed-over', shard: shard.name });
  }

  /** Stops serving a shard at once: its memory may be ahead of its log, or its lease is gone. */
  #drop(name: string, err: Error): void {
    const lease = this.#held.get(name);
    this.#held.delete(name);
    const shard = this.#serving.get(name);
    this.#serving.delete(name);
    if (lease === undefined && shard === undefined) return;
    if (lease !== undefined) lease.validUntil = 0;
    this.#report(`cluster: stopped serving ${name}: ${err.message}`, { event: 'cluster.shard.dropped', level: 'warn', shard: name, error: err.message });
    if (shard !== undefined) void this.#unless(shard.close(), `closing ${name}`);
    if (!this.#stopped) void this.poke();
  }

  /** Leaves the cluster: no more turns, every shard's final commit, leases released, heartbeat removed. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#pulseTimer);
    await this.#ticking;
    while (this.#busy.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await Promise.all([...this.#serving.values()].map((shard) => this.#handOver(shard)));
    await this.#unless(this.#membership.leave(), 'leaving the cluster');
  }

  /**
   * Waits for a step whose failure changes nothing for the others (a lease not released
   * expires; a heartbeat not removed ages out; a dropped shard's memory is discarded anyway),
   * and reports the failure.
   */
  async #unless(step: Promise<void>, what: string): Promise<void> {
    try {
      await step;
    } catch (err) {
      this.#report(`cluster: ${what} failed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.step.failed', level: 'warn', what });
    }
  }
}
