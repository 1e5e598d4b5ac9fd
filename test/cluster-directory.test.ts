// The platform directory of cluster mode (src/cluster/directory.ts) on a real three-server
// JetStream cluster, as a node's routing front (src/cluster/front.ts) uses it to
// authenticate: every node keeps a watched copy of the API tokens, so a token made on one
// node authenticates on another without its token being read, and an id the service never
// issued is refused 401 without reading the bucket at all (a flood of made-up ids costs
// JetStream nothing). The directory records the deployment's shard count once: a node given
// another is refused, and so is a node started on a directory of the layout before fixed
// shards (a shard per environment).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DomainError } from '../actors/errors.js';
import { Directory } from '../src/cluster/directory.js';
import { ClusterRequests } from '../src/cluster/front.js';
import { startClusterNode } from '../src/cluster/service.js';
import type { ClusterNode } from '../src/cluster/node.js';
import { MasterKey } from '../src/crypto/master-key.js';
import { issueToken, tokenIdKey } from '../src/http/platform-auth.js';
import { API_VERSION, type Incoming } from '../src/http/requests.js';
import { routes } from '../src/http/routes/index.js';
import { preparePlatform } from '../src/platforms.js';
import { natsClusterForSuite, startNatsCluster } from './support/nats-cluster.js';
import { Kvm } from '@nats-io/kv';
import { DIRECTORY_BUCKET } from '../src/cluster/directory.js';
import { BUCKET_OPTIONS } from '../src/cluster/shard-stream.js';
import { DEFAULT_CLUSTER_SHARDS } from '../src/config.js';
import { basicHeader } from './support/service.js';

const nats = natsClusterForSuite(3);
const masterKeyHex = randomBytes(32).toString('hex');
const masterKey = new MasterKey(Buffer.from(masterKeyHex, 'hex'));
const connections: NatsConnection[] = [];
after(async () => {
  for (const nc of connections) await nc.close();
});

/** A node's directory, on its own connection to one server, with its token copy loaded. */
async function directoryOn(server: number): Promise<Directory> {
  const nc = await connect({ servers: [nats.cluster.urls[server]!] });
  connections.push(nc);
  const directory = await Directory.open(nc, { replicas: 3 });
  await directory.masterKey(masterKey);
  await directory.followTokens(masterKey);
  return directory;
}

/** No node serves any shard here: an authenticated request is answered 503 (no node answers its shard's subject), a refused one 401. */
const noShardServed: Pick<ClusterNode, 'serving' | 'poke'> = { serving: () => undefined, poke: async () => undefined };

/** The code a node's front answers `GET /config` (or `method` `path`) with under these credentials. */
async function answerTo(directory: Directory, tokenId: string, secret: string, method = 'GET', path = '/config'): Promise<string> {
  const front = new ClusterRequests(noShardServed, directory, nats.nc, routes, 1_000);
  const incoming: Incoming = {
    method,
    path: `/${API_VERSION}${path}`,
    query: '',
    authorization: basicHeader(tokenId, secret),
    contentType: '',
    contentLength: '',
    headers: {},
  };
  try {
    await front.dispatch(incoming, () => undefined).process(undefined, 'request');
    return 'answered';
  } catch (err) {
    if (err instanceof DomainError) return err.code;
    throw err;
  }
}

const AUTHENTICATED = 'SERVICE_UNAVAILABLE';
const REFUSED = 'UNAUTHORIZED';

describe('the platform directory', { timeout: 60_000 }, () => {
  it('copies every token to every node: one made on another node authenticates here, its token never read', async () => {
    const here = await directoryOn(2);
    const there = await directoryOn(0);
    const platform = preparePlatform(masterKey, {}, Date.now());
    await there.register(platform.genesis);
    const { tokenId, clientSecret } = platform.credentials.sandbox;
    await here.watched(tokenId);

    const before = here.reads;
    assert.equal(await answerTo(here, tokenId, clientSecret), AUTHENTICATED);
    assert.equal(here.reads - before, 1, "one read, of the token's environment; the token is in the copy");
    assert.equal(await answerTo(here, tokenId, 'sk_wrong'), REFUSED);
    assert.equal(await answerTo(here, platform.credentials.production.tokenId, clientSecret), REFUSED, "the sandbox secret does not open production");
    assert.equal(here.reads - before, 2, "the production token's environment was read; nothing else");

    // A node started later copies the tokens made so far before it serves.
    const late = await directoryOn(1);
    assert.deepEqual(late.token(tokenId), here.token(tokenId));
  });

  it("a token made by its shard's owner reaches every node with its permissions; revoked, every node refuses it", async () => {
    const owner = await directoryOn(0);
    const other = await directoryOn(1);
    const platform = preparePlatform(masterKey, {}, Date.now());
    await owner.register(platform.genesis);
    const env = platform.genesis[0]!.env;
    const viewer = issueToken(env.environment, tokenIdKey(masterKey));
    const withViewer = { ...env, tokens: [...env.tokens, { tokenId: viewer.tokenId, secretHash: viewer.secretHash, id: 'Token:019a0000-0000-7000-8000-000000000001', name: 'viewer', permissions: ['VIEW' as const], createdAt: Date.now() }] };
    await owner.syncTokens(withViewer);
    await other.watched(viewer.tokenId);
    assert.equal(await answerTo(other, viewer.tokenId, viewer.clientSecret), AUTHENTICATED);
    assert.equal(await answerTo(other, viewer.tokenId, viewer.clientSecret, 'POST', '/quotes'), 'FORBIDDEN', 'a VIEW token cannot pay on another node either');

    await owner.syncTokens(env);
    assert.equal(await answerTo(owner, viewer.tokenId, viewer.clientSecret), REFUSED, "refused on the owner's node as soon as the revocation is written");
    for (let waited = 0; other.token(viewer.tokenId) !== undefined; waited += 10) {
      assert.ok(waited < 5_000, 'the revocation reaches the other node within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(await answerTo(other, viewer.tokenId, viewer.clientSecret), REFUSED);
    const late = await directoryOn(2);
    assert.equal(late.token(viewer.tokenId), undefined, 'a node started later never copies it');
    assert.equal(await answerTo(late, platform.credentials.sandbox.tokenId, platform.credentials.sandbox.clientSecret), AUTHENTICATED, 'the tokens left still open');
  });

  it('refuses an id the service did not issue without reading the bucket', async () => {
    const here = await directoryOn(1);
    const before = here.reads;
    const madeUp = Array.from({ length: 200 }, (_, n) => `tok_${n % 2 === 0 ? 'sbx' : 'prd'}_${randomBytes(n % 4 < 2 ? 20 : 12).toString('hex')}`);
    for (const tokenId of [...madeUp, 'nobody', 'tok_sbx_']) {
      assert.equal(await answerTo(here, tokenId, 'sk_guess'), REFUSED, tokenId);
    }
    assert.equal(here.reads, before, 'made-up token ids cost no read');

    // An issued id not in the copy (as one made on another node a moment ago) is read, once a second at most.
    const issued = issueToken('sandbox', tokenIdKey(masterKey));
    assert.equal(await answerTo(here, issued.tokenId, issued.clientSecret), REFUSED);
    assert.equal(await answerTo(here, issued.tokenId, issued.clientSecret), REFUSED);
    assert.equal(here.reads - before, 1, 'an issued id is looked for in the bucket');
  });

  it("a node given a MASTER_KEY other than the cluster's is refused before it joins", async () => {
    await directoryOn(0);
    const dataDir = mkdtempSync(join(tmpdir(), 'cluster-directory-node-'));
    try {
      const env = { NATS_URL: nats.cluster.urls.join(','), MASTER_KEY: randomBytes(32).toString('hex') };
      const started = await startClusterNode({ env, dataDir, port: 0, report: () => undefined }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      if (!(started instanceof Error)) await started.close();
      assert.match(String(started), /MASTER_KEY is not the key the cluster was started with/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('records the shard count once: a node given another count is refused at start, one given none uses the recorded one', async () => {
    const first = await directoryOn(0);
    assert.equal(first.placement.count, DEFAULT_CLUSTER_SHARDS, "the first node was given none: the default is recorded");
    const refused = await startRefused({ NATS_URL: nats.cluster.urls.join(','), MASTER_KEY: masterKeyHex, CLUSTER_SHARDS: '8' });
    assert.equal(refused, `Error: CLUSTER_SHARDS=8 is not this cluster's shard count: its directory records ${DEFAULT_CLUSTER_SHARDS}, fixed for the life of the deployment (another count would move environments to other logs)`);
    const given = await Directory.open(nats.nc, { replicas: 3, shards: DEFAULT_CLUSTER_SHARDS });
    assert.deepEqual(given.placement.shards, first.placement.shards);
    assert.equal((await directoryOn(1)).placement.count, DEFAULT_CLUSTER_SHARDS, 'still the recorded count');
  });

  it('a node started on a directory of the previous layout (a shard per environment) is refused, and writes nothing', async () => {
    const old = await startNatsCluster(1);
    const nc = await connect({ servers: [...old.urls] });
    try {
      // What the previous layout left: an environment's first entry under shard.<env>, and no recorded count.
      const kv = await new Kvm(nc).create(DIRECTORY_BUCKET, { replicas: 1, ...BUCKET_OPTIONS });
      await kv.create('shard.Platform_0190_sandbox', new Uint8Array([0x80]));
      const refused = await startRefused({ NATS_URL: old.urls.join(','), CLUSTER_REPLICAS: '1', CLUSTER_SHARDS: '4' });
      assert.match(refused, /previous layout \(a shard per environment: 1 shard\.\* keys, no recorded shard count\)/);
      assert.deepEqual(await keysOf(kv), ['shard.Platform_0190_sandbox'], 'no shard count, master key or platform was written');
    } finally {
      await nc.close();
      await old.stop();
    }
  });
});

/** Starts a node that must be refused; its error as a string. */
async function startRefused(env: Record<string, string>): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cluster-directory-refused-'));
  try {
    const started = await startClusterNode({ env, dataDir, port: 0, report: () => undefined }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    if (!(started instanceof Error)) await started.close();
    return String(started);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function keysOf(kv: Awaited<ReturnType<Kvm['create']>>): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  return keys.sort();
}
