// The platform directory of cluster mode: what every node must know to authenticate a
// request and find its shard, replicated in a JetStream key-value bucket. It holds, per
// platform environment (a shard), the environment's first log entry (its record and its
// accounts, which the shard's first owner logs), and per API token the environment it opens
// with its secret's hash; and the secrets every node shares: the master key (unless
// MASTER_KEY gives it) and the export signer, sealed under it. Keys are written once
// (`create`), so two nodes can never disagree about one.
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { pack, unpack } from 'msgpackr';
import { timingSafeEqual } from 'node:crypto';
import type { EnvGenesis } from '../platforms.js';
import type { PlatformEnv } from '../../actors/platform.js';
import type { TokenSource } from '../http/platform-auth.js';
import { MasterKey } from '../crypto/master-key.js';
import { drawBytes } from '../engine/entropy.js';
import { generateP256KeyPair, keyPairFromPrivateKey, type P256KeyPair } from '../crypto/p256.js';
import { openPrivateKey, sealPrivateKey } from '../crypto/wallet-secrets.js';
import { EXPORT_SIGNER_KEY_NAME } from '../crypto/signer-key.js';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { BUCKET_OPTIONS, bucketKeys, isWrongLastSequence, retrying } from './shard-stream.js';

export const DIRECTORY_BUCKET = 'platform-directory';

/** What a token opens: its environment, that environment's shard, and the secret's hash. */
export interface TokenRecord {
  envId: string;
  shard: string;
  secretHash: string;
}

/** An environment's shard name: its id with anything a stream name or key may not hold made `_` (ids are unique in the rest). */
export function shardNameOf(envId: string): string {
  return envId.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Tokens unknown to the directory are asked again after this long (a token made on another node may be on its way). */
const UNKNOWN_TOKEN_TTL_MS = 1_000;
/** Tokens remembered unknown, at most; past it the oldest go. */
const UNKNOWN_TOKENS_KEPT = 4_096;

/**
 * The directory as authentication reads it (http/platform-auth.ts's TokenSource): tokens and
 * the environments they open, as first made. Synchronous, over what `token` has read.
 */
export class Directory implements TokenSource {
  readonly #kv: KV;
  readonly #jsm: JetStreamManager;
  /** Tokens never change once made, so what was read is kept, with their environments as first made. */
  readonly #tokens = new Map<string, TokenRecord>();
  readonly #envs = new Map<string, PlatformEnv>();
  readonly #unknown = new Map<string, number>();

  private constructor(kv: KV, jsm: JetStreamManager) {
    this.#kv = kv;
    this.#jsm = jsm;
  }

  static async open(nc: NatsConnection, options: { replicas: number }): Promise<Directory> {
    const kv = await retrying(DIRECTORY_BUCKET, () => new Kvm(nc).create(DIRECTORY_BUCKET, { replicas: options.replicas, ...BUCKET_OPTIONS }));
    return new Directory(kv, await retrying(DIRECTORY_BUCKET, () => jetstreamManager(nc)));
  }

  /** A token already read (the hot path: no round trip). */
  token(tokenId: string): TokenRecord | undefined {
    return this.#tokens.get(tokenId);
  }

  /** An environment, as first made, of a token already read. */
  get(envId: string): PlatformEnv | undefined {
    return this.#envs.get(envId);
  }

  /** Whether `fetchToken` would ask the bucket: the token is not read yet, nor found missing in the last second. */
  shouldFetch(tokenId: string): boolean {
    if (this.#tokens.has(tokenId) || !/^[A-Za-z0-9_-]{1,128}$/.test(tokenId)) return false;
    const since = this.#unknown.get(tokenId);
    return since === undefined || Date.now() - since >= UNKNOWN_TOKEN_TTL_MS;
  }

  /** Reads a token and its environment from the bucket, so that `token` and `get` know them; false if it holds none. */
  async fetchToken(tokenId: string): Promise<boolean> {
    if (this.#tokens.has(tokenId)) return true;
    if (!this.shouldFetch(tokenId)) return false;
    const entry = await retrying(DIRECTORY_BUCKET, () => this.#kv.get(`token.${tokenId}`));
    const record = entry === null || entry.operation !== 'PUT' ? undefined : entry.json<TokenRecord>();
    const genesis = record === undefined ? undefined : await this.genesis(record.shard);
    if (record === undefined || genesis === undefined) {
      if (this.#unknown.size >= UNKNOWN_TOKENS_KEPT) this.#unknown.delete(this.#unknown.keys().next().value!);
      this.#unknown.set(tokenId, Date.now());
      return false;
    }
    this.#unknown.delete(tokenId);
    this.#envs.set(record.envId, genesis.env);
    this.#tokens.set(tokenId, record);
    return true;
  }

  /** Every shard's name. */
  async shards(): Promise<string[]> {
    // Shards are never deleted, so every key is one.
    return (await bucketKeys(this.#jsm, DIRECTORY_BUCKET, 'shard.*')).map((key) => key.slice('shard.'.length));
  }

  /** The first log entry of a shard's environment. */
  async genesis(shard: string): Promise<EnvGenesis | undefined> {
    const entry = await retrying(DIRECTORY_BUCKET, () => this.#kv.get(`shard.${shard}`));
    if (entry === null || entry.operation !== 'PUT') return undefined;
    return unpack(entry.value) as EnvGenesis;
  }

  /**
   * Adds a platform's environments: their shards first, then their tokens, so a token that
   * authenticates always has its shard. Resolves once the bucket's quorum holds every key.
   */
  async register(genesis: readonly EnvGenesis[]): Promise<void> {
    for (const g of genesis) await this.#createNew(`shard.${shardNameOf(g.env.id)}`, pack(g));
    for (const g of genesis) {
      for (const token of g.env.tokens) {
        const record: TokenRecord = { envId: g.env.id, shard: shardNameOf(g.env.id), secretHash: token.secretHash };
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
      const entry = await retrying(DIRECTORY_BUCKET, () => this.#kv.get('cluster.master-key'));
      if (entry === null || entry.operation !== 'PUT') throw new Error('the directory holds no master key');
      return new MasterKey(Buffer.from(entry.string(), 'hex'));
    }
    const check = given.derive('cluster master key check');
    await this.#createOnce('cluster.master-key-check', check.toString('hex'));
    const entry = await retrying(DIRECTORY_BUCKET, () => this.#kv.get('cluster.master-key-check'));
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
    const entry = await retrying(DIRECTORY_BUCKET, () => this.#kv.get(key));
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
    const entry = await retrying(DIRECTORY_BUCKET, () => this.#kv.get(key));
    return entry !== null && entry.operation === 'PUT' && Buffer.from(entry.value).equals(bytes);
  }

  /** Writes a key that must be new (ids are drawn unique). */
  async #createNew(key: string, value: string | Uint8Array): Promise<void> {
    if (!(await this.#createOnce(key, value))) throw new Error(`the directory holds ${key} already`);
  }
}
