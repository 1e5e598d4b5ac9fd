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
import { MasterKey } from '../crypto/master-key.js';
import { drawBytes } from '../engine/entropy.js';
import { generateP256KeyPair, keyPairFromPrivateKey, type P256KeyPair } from '../crypto/p256.js';
import { openPrivateKey, sealPrivateKey } from '../crypto/wallet-secrets.js';
import { EXPORT_SIGNER_KEY_NAME } from '../crypto/signer-key.js';
import { isWrongLastSequence } from './shard-stream.js';

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

export class Directory {
  readonly #kv: KV;
  /** Tokens never change once made, so what was read is kept. */
  readonly #tokens = new Map<string, TokenRecord>();
  readonly #unknown = new Map<string, number>();

  private constructor(kv: KV) {
    this.#kv = kv;
  }

  static async open(nc: NatsConnection, options: { replicas: number }): Promise<Directory> {
    return new Directory(await new Kvm(nc).create(DIRECTORY_BUCKET, { replicas: options.replicas, history: 1 }));
  }

  /** A token already read (the hot path: no round trip). */
  knownToken(tokenId: string): TokenRecord | undefined {
    return this.#tokens.get(tokenId);
  }

  /** A token as the directory holds it; undefined if it holds none (asked again after a second). */
  async token(tokenId: string): Promise<TokenRecord | undefined> {
    const known = this.#tokens.get(tokenId);
    if (known !== undefined) return known;
    const since = this.#unknown.get(tokenId);
    if (since !== undefined && Date.now() - since < UNKNOWN_TOKEN_TTL_MS) return undefined;
    // Only names a key may have are asked (anything else is no token of ours).
    const entry = /^[A-Za-z0-9_-]{1,128}$/.test(tokenId) ? await this.#kv.get(`token.${tokenId}`) : null;
    if (entry === null || entry.operation !== 'PUT') {
      if (this.#unknown.size >= UNKNOWN_TOKENS_KEPT) this.#unknown.delete(this.#unknown.keys().next().value!);
      this.#unknown.set(tokenId, Date.now());
      return undefined;
    }
    const record = entry.json<TokenRecord>();
    this.#unknown.delete(tokenId);
    this.#tokens.set(tokenId, record);
    return record;
  }

  /** Every shard's name. */
  async shards(): Promise<string[]> {
    const names: string[] = [];
    for await (const key of await this.#kv.keys('shard.*')) names.push(key.slice('shard.'.length));
    return names;
  }

  /** The first log entry of a shard's environment. */
  async genesis(shard: string): Promise<EnvGenesis | undefined> {
    const entry = await this.#kv.get(`shard.${shard}`);
    if (entry === null || entry.operation !== 'PUT') return undefined;
    return unpack(entry.value) as EnvGenesis;
  }

  /**
   * Adds a platform's environments: their shards first, then their tokens, so a token that
   * authenticates always has its shard. Resolves once the bucket's quorum holds every key.
   */
  async register(genesis: readonly EnvGenesis[]): Promise<void> {
    for (const g of genesis) await this.#kv.create(`shard.${shardNameOf(g.env.id)}`, pack(g));
    for (const g of genesis) {
      for (const token of g.env.tokens) {
        const record: TokenRecord = { envId: g.env.id, shard: shardNameOf(g.env.id), secretHash: token.secretHash };
        await this.#kv.create(`token.${token.tokenId}`, JSON.stringify(record));
      }
    }
  }

  /**
   * Claims the making of the cluster's default platform: true for exactly one caller ever
   * (the first node of an empty cluster).
   */
  async claimDefaultPlatform(nodeId: string): Promise<boolean> {
    return this.#createOnce('cluster.default-platform', nodeId);
  }

  /**
   * The master key every node uses. With MASTER_KEY given, the directory keeps only a check
   * derived from it, and a node given another key is refused; without it, the first node
   * draws one and keeps it in the bucket (so NATS must then be trusted like a key file).
   */
  async masterKey(given: MasterKey | undefined): Promise<MasterKey> {
    if (given === undefined) {
      await this.#createOnce('cluster.master-key', drawBytes(32).toString('hex'));
      const entry = await this.#kv.get('cluster.master-key');
      if (entry === null || entry.operation !== 'PUT') throw new Error('the directory holds no master key');
      return new MasterKey(Buffer.from(entry.string(), 'hex'));
    }
    const check = given.derive('cluster master key check');
    await this.#createOnce('cluster.master-key-check', check.toString('hex'));
    const entry = await this.#kv.get('cluster.master-key-check');
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
    const entry = await this.#kv.get(key);
    if (entry === null || entry.operation !== 'PUT') throw new Error('the directory holds no export signer');
    return keyPairFromPrivateKey(openPrivateKey(masterKey, EXPORT_SIGNER_KEY_NAME, entry.string()));
  }

  /** Writes `value` under `key` unless the key has one; true if this call wrote it. */
  async #createOnce(key: string, value: string): Promise<boolean> {
    try {
      await this.#kv.create(key, value);
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }
}
