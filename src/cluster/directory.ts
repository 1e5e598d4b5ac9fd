// The platform directory of cluster mode: what every node must know to authenticate a
// request and serve its environment, replicated in a JetStream key-value bucket. It holds
// the deployment's shard count (recorded once: placement.ts), per platform environment its
// first log entry (its record and its accounts) under a key naming its shard, which the
// shard's owner logs, and per API token the environment it opens with its secret's hash; and
// the secrets every node shares: the master key (unless MASTER_KEY gives it) and the export
// signer, sealed under it. Keys are written once (`create`), so two nodes can never disagree
// about one.
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV, type KvEntry, type KvWatchEntry } from '@nats-io/kv';
import { pack, unpack } from 'msgpackr';
import { timingSafeEqual } from 'node:crypto';
import type { EnvGenesis } from '../platforms.js';
import { grantedBits, permissionBits, tokenRecordOf, type Permission, type PlatformEnv, type TokenGrant } from '../../actors/platform.js';
import { isIssuedTokenId, tokenIdKey, type TokenSource } from '../http/platform-auth.js';
import { MasterKey } from '../crypto/master-key.js';
import { drawBytes } from '../engine/entropy.js';
import { generateP256KeyPair, keyPairFromPrivateKey, type P256KeyPair } from '../crypto/p256.js';
import { openPrivateKey, sealPrivateKey } from '../crypto/wallet-secrets.js';
import { EXPORT_SIGNER_KEY_NAME } from '../crypto/signer-key.js';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { BUCKET_OPTIONS, bucketKeys, isWrongLastSequence, retrying } from './shard-stream.js';
import { envKeyOf, Placement } from './placement.js';
import { DEFAULT_CLUSTER_SHARDS } from '../config.js';

export const DIRECTORY_BUCKET = 'platform-directory';

/** What a token opens, as the directory holds it: its environment, that environment's shard, the secret's hash, and its permissions. */
export interface TokenRecord {
  envId: string;
  shard: string;
  secretHash: string;
  /** Absent in records written before permissions existed: those tokens hold all three. */
  permissions?: Permission[];
}

/** A token as this node's copy keeps it: what authentication reads, and its environment's shard. */
interface CopiedToken extends TokenGrant {
  readonly shard: string;
}

function copiedToken(record: TokenRecord): CopiedToken {
  const { envId, shard, secretHash } = record;
  return { envId, shard, secretHash, permissions: grantedBits(record.permissions) };
}

/** An issued token not in the directory is asked again after this long (one made on another node may be on its way). */
const UNKNOWN_TOKEN_TTL_MS = 1_000;
/** Tokens remembered unknown, at most; past it the oldest go. */
const UNKNOWN_TOKENS_KEPT = 4_096;
const TOKEN_KEY_PREFIX = 'token.';
/** An environment's first entry is under `env.<shard>.<env key>`, so a shard's owner lists its own. */
const ENV_KEY_PREFIX = 'env.';
/** The deployment's shard count, written by its first node. */
const SHARD_COUNT_KEY = 'cluster.shard-count';
/** Genesis keys read at once when a shard's owner lists the environments it does not hold yet. */
const GENESIS_READS_AT_ONCE = 64;

/** An environment's first entry in the directory: under its shard, by its id. */
function genesisKey(shard: string, envId: string): string {
  return `${ENV_KEY_PREFIX}${shard}.${envKeyOf(envId)}`;
}

/**
 * The directory as authentication reads it (http/platform-auth.ts's TokenSource): tokens and
 * the environments they open, as first made. Synchronous, over a local copy: every token,
 * kept by a watch of the bucket's token keys (`followTokens`), and the environments of
 * tokens used here, read on first use.
 */
export class Directory implements TokenSource {
  readonly #kv: KV;
  readonly #jsm: JetStreamManager;
  /** The watched copy: every token key's record (a deleted key leaves it). */
  readonly #tokens = new Map<string, CopiedToken>();
  /** The copy's token ids by environment, for `syncTokens`. */
  readonly #tokensOfEnv = new Map<string, Set<string>>();
  readonly #envs = new Map<string, PlatformEnv>();
  readonly #unknown = new Map<string, number>();
  /** Who waits for a token to reach the watched copy (`watched`). */
  readonly #awaited = new Map<string, Array<() => void>>();
  /** Tells issued token ids from made-up ones; unset until `followTokens`, when no id passes. */
  #tokenIdKey: Buffer | undefined;
  #reads = 0;

  /** Set by `open` from the recorded shard count. */
  #placement: Placement | undefined;

  private constructor(kv: KV, jsm: JetStreamManager) {
    this.#kv = kv;
    this.#jsm = jsm;
  }

  /** The deployment's shards and where each environment goes. */
  get placement(): Placement {
    if (this.#placement === undefined) throw new Error('the directory is not open');
    return this.#placement;
  }

  /**
   * The cluster's directory, with its shard count: the one recorded, which `shards` (the
   * node's CLUSTER_SHARDS) must equal when given; on an empty cluster `shards`, else
   * DEFAULT_CLUSTER_SHARDS, is recorded. A directory of the layout before fixed shards is refused.
   */
  static async open(nc: NatsConnection, options: { replicas: number; shards?: number | undefined }): Promise<Directory> {
    const kv = await retrying(DIRECTORY_BUCKET, () => new Kvm(nc).create(DIRECTORY_BUCKET, { replicas: options.replicas, ...BUCKET_OPTIONS }));
    const jsm = await retrying(DIRECTORY_BUCKET, () => jetstreamManager(nc));
    const previous = await bucketKeys(jsm, DIRECTORY_BUCKET, 'shard.*');
    if (previous.length > 0) {
      throw new Error(
        `this cluster's directory is of the previous layout (a shard per environment: ${previous.length} shard.* keys, no recorded shard count); ` +
          'this version places environments in a fixed number of shards and does not serve it: start it on NATS servers of its own',
      );
    }
    const directory = new Directory(kv, jsm);
    directory.#placement = new Placement(await directory.#shardCount(options.shards));
    return directory;
  }

  /** The recorded shard count, recorded first if there is none; a node given another is refused. */
  async #shardCount(given: number | undefined): Promise<number> {
    await this.#createOnce(SHARD_COUNT_KEY, String(given ?? DEFAULT_CLUSTER_SHARDS));
    const entry = await this.#get(SHARD_COUNT_KEY);
    const recorded = entry === null || entry.operation !== 'PUT' ? NaN : Number(entry.string());
    if (!Number.isSafeInteger(recorded) || recorded < 1) throw new Error(`the directory holds no shard count (${SHARD_COUNT_KEY})`);
    if (given !== undefined && given !== recorded) {
      throw new Error(`CLUSTER_SHARDS=${given} is not this cluster's shard count: its directory records ${recorded}, fixed for the life of the deployment (another count would move environments to other logs)`);
    }
    return recorded;
  }

  /** Reads of the bucket so far, each a round trip to its stream's leader (tests count them). */
  get reads(): number {
    return this.#reads;
  }

  /**
   * Copies every token into this node and keeps the copy current (a watch of the token
   * keys, which JetStream delivers in order and resumes after a reconnect); resolves once
   * the tokens made so far are here. From then on an id neither copied nor issued under
   * `masterKey` is unknown without a read.
   */
  async followTokens(masterKey: MasterKey): Promise<void> {
    this.#tokenIdKey = tokenIdKey(masterKey);
    // Listed before the watch starts: with a token key listed, the watch's first delivery holds one and its end is marked (below).
    const none = (await bucketKeys(this.#jsm, DIRECTORY_BUCKET, `${TOKEN_KEY_PREFIX}>`)).length === 0;
    const watch = await retrying(DIRECTORY_BUCKET, () => this.#kv.watch({ key: `${TOKEN_KEY_PREFIX}>` }));
    await new Promise<void>((loaded, failed) => {
      if (none) loaded();
      // After the load a watch that ends (the connection closed) leaves the copy as it was; issued ids are still read.
      (async () => {
        for await (const entry of watch) {
          this.#copy(entry);
          // The client marks the last value of the watch's first delivery, and every later one, as an update.
          if (entry.isUpdate) loaded();
        }
      })().then(
        () => failed(new Error('the directory watch ended before the tokens were copied')),
        (err: unknown) => failed(err),
      );
    });
  }

  #copy(entry: KvWatchEntry): void {
    const tokenId = entry.key.slice(TOKEN_KEY_PREFIX.length);
    if (entry.operation !== 'PUT') {
      this.#forget(tokenId);
      return;
    }
    this.#keep(tokenId, copiedToken(entry.json<TokenRecord>()));
    this.#unknown.delete(tokenId);
    for (const resolve of this.#awaited.get(tokenId) ?? []) resolve();
    this.#awaited.delete(tokenId);
  }

  #keep(tokenId: string, token: CopiedToken): void {
    this.#tokens.set(tokenId, token);
    let ids = this.#tokensOfEnv.get(token.envId);
    if (ids === undefined) this.#tokensOfEnv.set(token.envId, (ids = new Set()));
    ids.add(tokenId);
  }

  #forget(tokenId: string): void {
    const token = this.#tokens.get(tokenId);
    if (token === undefined) return;
    this.#tokens.delete(tokenId);
    this.#tokensOfEnv.get(token.envId)?.delete(tokenId);
  }

  /**
   * Brings the directory's tokens of `env` to what its record holds, as its shard's owner
   * sees it: a token made there is added, a revoked one deleted (the bucket's watch takes
   * the deletion to every node's copy; this node's copy drops it at once). Run after every
   * change of an environment's tokens, and for every environment of a shard as it opens, so
   * a change whose directory write a crash cut short is written then.
   */
  async syncTokens(env: PlatformEnv): Promise<void> {
    const shard = this.placement.shardOf(env.id);
    const held = new Set<string>();
    for (const token of env.tokens) {
      held.add(token.tokenId);
      const permissions = [...tokenRecordOf(env, token).permissions];
      const copied = this.#tokens.get(token.tokenId);
      if (copied !== undefined && copied.secretHash === token.secretHash && copied.permissions === permissionBits(permissions)) continue;
      const record: TokenRecord = { envId: env.id, shard, secretHash: token.secretHash, permissions };
      await retrying(DIRECTORY_BUCKET, () => this.#kv.put(`${TOKEN_KEY_PREFIX}${token.tokenId}`, JSON.stringify(record)));
      this.#keep(token.tokenId, copiedToken(record));
    }
    for (const tokenId of [...(this.#tokensOfEnv.get(env.id) ?? [])]) {
      if (held.has(tokenId)) continue;
      await retrying(DIRECTORY_BUCKET, () => this.#kv.delete(`${TOKEN_KEY_PREFIX}${tokenId}`));
      this.#forget(tokenId);
    }
  }

  /** Resolves once the watched copy holds the token (tests wait on it). */
  watched(tokenId: string): Promise<void> {
    if (this.#tokens.has(tokenId)) return Promise.resolve();
    return new Promise((resolve) => this.#awaited.set(tokenId, [...(this.#awaited.get(tokenId) ?? []), resolve]));
  }

  /** A token of the watched copy (the hot path: no round trip). */
  token(tokenId: string): CopiedToken | undefined {
    return this.#tokens.get(tokenId);
  }

  /** An environment, as first made, of a token already used here. */
  get(envId: string): PlatformEnv | undefined {
    return this.#envs.get(envId);
  }

  /**
   * Whether `fetchToken` would read the bucket: for a copied token whose environment is not
   * read yet; for an issued id not copied yet (made on another node a moment ago, or not at
   * all), at most once a second; never for an id the service did not issue.
   */
  shouldFetch(tokenId: string): boolean {
    const token = this.#tokens.get(tokenId);
    if (token !== undefined) return !this.#envs.has(token.envId);
    if (this.#tokenIdKey === undefined || !isIssuedTokenId(this.#tokenIdKey, tokenId)) return false;
    const since = this.#unknown.get(tokenId);
    return since === undefined || Date.now() - since >= UNKNOWN_TOKEN_TTL_MS;
  }

  /** Reads a token and its environment from the bucket, so that `token` and `get` know them; false if it holds none. */
  async fetchToken(tokenId: string): Promise<boolean> {
    if (!this.shouldFetch(tokenId)) return this.#tokens.has(tokenId);
    const record = this.#tokens.get(tokenId) ?? (await this.#readToken(tokenId));
    const genesis = record === undefined ? undefined : await this.genesisOf(record.shard, record.envId);
    if (record === undefined || genesis === undefined) {
      if (this.#unknown.size >= UNKNOWN_TOKENS_KEPT) this.#unknown.delete(this.#unknown.keys().next().value!);
      this.#unknown.set(tokenId, Date.now());
      return false;
    }
    this.#envs.set(record.envId, genesis.env);
    this.#keep(tokenId, record);
    return true;
  }

  async #readToken(tokenId: string): Promise<CopiedToken | undefined> {
    const entry = await this.#get(`${TOKEN_KEY_PREFIX}${tokenId}`);
    return entry === null || entry.operation !== 'PUT' ? undefined : copiedToken(entry.json<TokenRecord>());
  }

  /** The first log entry of an environment, looked for under `shard` (undefined if the shard has no such environment). */
  async genesisOf(shard: string, envId: string): Promise<EnvGenesis | undefined> {
    const entry = await this.#get(genesisKey(shard, envId));
    if (entry === null || entry.operation !== 'PUT') return undefined;
    return unpack(entry.value) as EnvGenesis;
  }

  /** The first log entries of a shard's environments but those whose ids `held` has (its owner's world). */
  async genesisOfShard(shard: string, held: Iterable<string>): Promise<EnvGenesis[]> {
    const heldKeys = new Set([...held].map((envId) => genesisKey(shard, envId)));
    // Environments are never deleted, so every key listed holds one.
    const keys = (await bucketKeys(this.#jsm, DIRECTORY_BUCKET, `${ENV_KEY_PREFIX}${shard}.*`)).filter((key) => !heldKeys.has(key)).sort();
    const found: EnvGenesis[] = [];
    for (let start = 0; start < keys.length; start += GENESIS_READS_AT_ONCE) {
      const entries = await Promise.all(keys.slice(start, start + GENESIS_READS_AT_ONCE).map((key) => this.#get(key)));
      for (const entry of entries) if (entry !== null && entry.operation === 'PUT') found.push(unpack(entry.value) as EnvGenesis);
    }
    return found;
  }

  /**
   * Adds a platform's environments: their first entries first, under their shards, then
   * their tokens, so a token that authenticates always has its environment. Resolves once
   * the bucket's quorum holds every key.
   */
  async register(genesis: readonly EnvGenesis[]): Promise<void> {
    for (const g of genesis) await this.#createNew(genesisKey(this.placement.shardOf(g.env.id), g.env.id), pack(g));
    for (const g of genesis) {
      for (const token of g.env.tokens) {
        const { permissions } = tokenRecordOf(g.env, token);
        const record: TokenRecord = { envId: g.env.id, shard: this.placement.shardOf(g.env.id), secretHash: token.secretHash, permissions: [...permissions] };
        await this.#createNew(`token.${token.tokenId}`, JSON.stringify(record));
      }
    }
  }

  /**
   * Claims the making of the cluster's default platform: true for exactly one caller ever
   * (the first node of an empty cluster). The claim names this start of the node, not only
   * the node: the same node started again must not take the old claim for its own.
   */
  async claimDefaultPlatform(nodeId: string): Promise<boolean> {
    return this.#createOnce('cluster.default-platform', `${nodeId} ${drawBytes(8).toString('hex')}`);
  }

  /**
   * The master key every node uses. With MASTER_KEY given, the directory keeps only a check
   * derived from it, and a node given another key is refused; without it, the first node
   * draws one and keeps it in the bucket (so NATS must then be trusted like a key file).
   */
  async masterKey(given: MasterKey | undefined): Promise<MasterKey> {
    if (given === undefined) {
      await this.#createOnce('cluster.master-key', drawBytes(32).toString('hex'));
      const entry = await this.#get('cluster.master-key');
      if (entry === null || entry.operation !== 'PUT') throw new Error('the directory holds no master key');
      return new MasterKey(Buffer.from(entry.string(), 'hex'));
    }
    const check = given.derive('cluster master key check');
    await this.#createOnce('cluster.master-key-check', check.toString('hex'));
    const entry = await this.#get('cluster.master-key-check');
    const held = entry === null ? Buffer.alloc(0) : Buffer.from(entry.string(), 'hex');
    if (held.length !== check.length || !timingSafeEqual(held, check)) {
      throw new Error('MASTER_KEY is not the key the cluster was started with (the directory holds another key check)');
    }
    return given;
  }

  /** The export signer every node uses (its public key is the one clients pin), sealed under the master key in the bucket. */
  async exportSigner(masterKey: MasterKey): Promise<P256KeyPair> {
    const key = `cluster.${EXPORT_SIGNER_KEY_NAME}`;
    await this.#createOnce(key, sealPrivateKey(masterKey, EXPORT_SIGNER_KEY_NAME, generateP256KeyPair().privateKey));
    const entry = await this.#get(key);
    if (entry === null || entry.operation !== 'PUT') throw new Error('the directory holds no export signer');
    return keyPairFromPrivateKey(openPrivateKey(masterKey, EXPORT_SIGNER_KEY_NAME, entry.string()));
  }

  /**
   * Writes `value` under `key` unless the key has one; true if the key now holds this value
   * (a create retried after a lost answer finds its own write).
   */
  async #createOnce(key: string, value: string | Uint8Array): Promise<boolean> {
    const bytes = typeof value === 'string' ? Buffer.from(value) : value;
    try {
      await retrying(DIRECTORY_BUCKET, () => this.#kv.create(key, bytes));
      return true;
    } catch (err) {
      if (!isWrongLastSequence(err)) throw err;
    }
    const entry = await this.#get(key);
    return entry !== null && entry.operation === 'PUT' && Buffer.from(entry.value).equals(bytes);
  }

  /** A key's entry, read from the stream's leader. */
  #get(key: string): Promise<KvEntry | null> {
    this.#reads++;
    return retrying(DIRECTORY_BUCKET, () => this.#kv.get(key));
  }

  /** Writes a key that must be new (ids are drawn unique). */
  async #createNew(key: string, value: string | Uint8Array): Promise<void> {
    if (!(await this.#createOnce(key, value))) throw new Error(`the directory holds ${key} already`);
  }
}
