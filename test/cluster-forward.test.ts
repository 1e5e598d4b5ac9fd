// A request sent to a cluster node that does not serve its environment's shard: the node
// routes and authenticates it once, reads its body, and sends it on the shard's NATS subject
// (src/cluster/shard-requests.ts); the owner runs it without routing or authenticating it
// again and its answer comes back as the owner gave it: status, body, the headers a client
// must see (Idempotent-Replayed), the request id. Two nodes in this process, so routing and
// authentication can be counted across both (a spy on the prototypes they share). Two
// shards over the two nodes, so a shard holds several environments: each is served with its
// own money, and one made while its shard is open joins it on its first request, its first
// entry logged once by the owner.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { startClusterNode, type RunningNode } from '../src/cluster/service.js';
import { ClusterRequests } from '../src/cluster/front.js';
import { Directory } from '../src/cluster/directory.js';
import { shardOf } from '../src/cluster/placement.js';
import { Authenticator } from '../src/http/platform-auth.js';
import { Router } from '../src/http/router.js';
import { API_VERSION, type Incoming } from '../src/http/requests.js';
import { routes } from '../src/http/routes/index.js';
import { DomainError } from '../actors/errors.js';
import { natsClusterForSuite } from './support/nats-cluster.js';
import { basicHeader } from './support/service.js';
import type { PlatformCredentials } from '../src/platforms.js';

const nats = natsClusterForSuite(3);
/** Two shards over two nodes: every platform's environments share them, so one shard holds several. */
const SHARDS = 2;
const dataDirs: string[] = [];
const running: RunningNode[] = [];

/** A platform made through a node's operator endpoint. */
async function createPlatform(node: RunningNode, dataDir: string): Promise<PlatformCredentials> {
  const res = await fetch(`${new URL(node.baseUrl).origin}/_operator/platforms`, {
    method: 'POST',
    headers: { authorization: `Bearer ${readFileSync(join(dataDir, 'operator.key'), 'utf8').trim()}`, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(res.status, 201);
  return (await res.json()) as PlatformCredentials;
}

/** wal_entries_total on a node's GET /metrics: the log entries of the shards it serves. */
async function walEntriesOf(node: RunningNode): Promise<number> {
  const line = /^wal_entries_total (\d+)$/m.exec(await (await fetch(`${new URL(node.baseUrl).origin}/metrics`)).text());
  assert.ok(line, 'the node reports wal_entries_total');
  return Number(line[1]);
}

const sandboxAuth = (credentials: PlatformCredentials): string => basicHeader(credentials.sandbox.tokenId, credentials.sandbox.clientSecret);

async function startNode(nodeId: string): Promise<RunningNode> {
  const dataDir = mkdtempSync(join(tmpdir(), `cluster-forward-${nodeId}-`));
  dataDirs.push(dataDir);
  const env = { NATS_URL: nats.cluster.urls.join(','), NODE_ID: nodeId, CLUSTER_LEASE_SECONDS: '1', CLUSTER_REPLICAS: '1', CLUSTER_SHARDS: String(SHARDS), LOG_LEVEL: 'error' };
  const node = await startClusterNode({ env, dataDir, port: 0, report: () => undefined });
  running.push(node);
  return node;
}

/** Routings and authentications of every node in this process while `work` runs. */
async function counted<T>(work: () => Promise<T>): Promise<{ result: T; routed: number; authenticated: number }> {
  const match = Router.prototype.match;
  const exact = Router.prototype.exact;
  const authenticate = Authenticator.prototype.authenticate;
  let routed = 0;
  let authenticated = 0;
  Router.prototype.match = function (this: Router, ...args) {
    routed++;
    return match.apply(this, args);
  };
  // A route found by its exact path is routed too, without `match`.
  Router.prototype.exact = function (this: Router, ...args) {
    const route = exact.apply(this, args);
    if (route !== undefined) routed++;
    return route;
  };
  Authenticator.prototype.authenticate = function (this: Authenticator, ...args) {
    authenticated++;
    return authenticate.apply(this, args);
  };
  try {
    return { result: await work(), routed, authenticated };
  } finally {
    Router.prototype.match = match;
    Router.prototype.exact = exact;
    Authenticator.prototype.authenticate = authenticate;
  }
}

/** Until each node serves what the other does not, and `shard` is served by one of them; then [owner, the other]. */
async function ownerAndOther(nodes: RunningNode[], shard: string): Promise<[RunningNode, RunningNode]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const node of nodes) await node.node.poke();
    const owner = nodes.find((node) => node.node.owned.includes(shard));
    if (owner !== undefined && nodes.every((node) => node.node.nodes.length === nodes.length)) {
      return [owner, nodes.find((node) => node !== owner)!];
    }
    assert.ok(Date.now() < deadline, `no node serves ${shard}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('cluster mode: a request sent to a node that does not serve its shard', { timeout: 120_000 }, () => {
  let owner: RunningNode;
  let entry: RunningNode;
  let auth: string;
  let envId: string;
  before(async () => {
    const first = await startNode('fwd-a');
    const second = await startNode('fwd-b');
    const credentials = JSON.parse(readFileSync(first.credentialsPath, 'utf8')) as { platformId: string; sandbox: { tokenId: string; clientSecret: string } };
    auth = basicHeader(credentials.sandbox.tokenId, credentials.sandbox.clientSecret);
    envId = `${credentials.platformId}#sandbox`;
    [owner, entry] = await ownerAndOther([first, second], shardOf(envId, SHARDS));
    // A node reads a token's environment from the directory on the token's first use there, and then prepares the request again: not counted below.
    assert.equal((await send(entry.baseUrl, 'GET', '/config', {})).status, 200);
  });
  after(async () => {
    for (const node of running) await node.close();
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });

  function send(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Response> {
    return fetch(`${base}${path}`, {
      method,
      headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  it('is routed and authenticated once, and answered with the owner\'s status, body and headers', async () => {
    assert.ok(!entry.node.owned.includes(shardOf(envId, SHARDS)), 'the entry node does not serve the shard');
    const customer = { customerType: 'INDIVIDUAL', platformCustomerId: 'forwarded-1' };
    const created = await counted(() => send(entry.baseUrl, 'POST', '/customers', { 'idempotency-key': 'fwd-create', 'x-request-id': 'fwd-req-1' }, customer));
    assert.equal(created.result.status, 201);
    assert.equal(created.result.headers.get('x-request-id'), 'fwd-req-1');
    const body = (await created.result.json()) as { id: string; platformCustomerId: string };
    assert.equal(body.platformCustomerId, 'forwarded-1');
    assert.deepEqual({ routed: created.routed, authenticated: created.authenticated }, { routed: 1, authenticated: 1 }, 'routed and authenticated once, by the entry node');

    // The owner's replay, with its header, through the entry node.
    const replayed = await counted(() => send(entry.baseUrl, 'POST', '/customers', { 'idempotency-key': 'fwd-create' }, customer));
    assert.equal(replayed.result.status, 201);
    assert.equal(replayed.result.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await replayed.result.json(), body);
    assert.deepEqual({ routed: replayed.routed, authenticated: replayed.authenticated }, { routed: 1, authenticated: 1 });

    // The owner's refusal, named with the client's request id.
    const reused = await send(entry.baseUrl, 'POST', '/customers', { 'idempotency-key': 'fwd-create', 'x-request-id': 'fwd-req-3' }, { ...customer, platformCustomerId: 'other' });
    assert.equal(reused.status, 409);
    assert.deepEqual(await reused.json(), { status: 409, code: 'IDEMPOTENCY_KEY_REUSED', message: 'Idempotency-Key was already used with a different request body', requestId: 'fwd-req-3' });

    // The same record read at the owner and through the entry node; HEAD is GET's head.
    const atOwner = await send(owner.baseUrl, 'GET', `/customers/${body.id}`, {});
    const forwarded = await send(entry.baseUrl, 'GET', `/customers/${body.id}`, {});
    assert.equal(forwarded.status, 200);
    const text = await forwarded.text();
    assert.equal(text, await atOwner.text());
    const head = await send(entry.baseUrl, 'HEAD', `/customers/${body.id}`, {});
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(text)));
    assert.equal(await head.text(), '');
  });

  it('a request larger than a NATS message carries is refused 413, as a too-large body, and changes nothing', async () => {
    const directory = await Directory.open(nats.nc, { replicas: 1 });
    await directory.followTokens(await directory.masterKey(undefined));
    // The channel's limit made small, so that a body the front accepts is over it.
    const limit = 400;
    const channel = { info: { ...nats.nc.info!, max_payload: limit }, request: nats.nc.request.bind(nats.nc) } as unknown as NatsConnection;
    const front = new ClusterRequests({ serving: () => undefined, poke: async () => undefined }, directory, channel, routes, 1_000);
    const answer = async (method: string, path: string, body?: unknown): Promise<number | string> => {
      const raw = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const incoming: Incoming = { method, path: `/${API_VERSION}${path}`, query: '', authorization: auth, contentType: 'application/json', contentLength: String(raw?.length ?? ''), headers: {} };
      try {
        return (await front.dispatch(incoming, () => undefined).process(raw, 'fwd-size')).status;
      } catch (err) {
        if (err instanceof DomainError) return err.code;
        throw err;
      }
    };
    assert.equal(await answer('GET', '/config'), 200, 'a small request is sent on and answered');
    const large = { customerType: 'INDIVIDUAL', platformCustomerId: 'too-large', fullName: 'x'.repeat(255) };
    assert.equal(await answer('POST', '/customers', large), 'PAYLOAD_TOO_LARGE');
    const listed = (await (await send(owner.baseUrl, 'GET', '/customers?platformCustomerId=too-large', {})).json()) as { data: unknown[] };
    assert.deepEqual(listed.data, [], 'nothing was made');
  });

  /** `send` under another platform's credentials (the authorization header overrides the default platform's). */
  const sendAs = (authorization: string, base: string, method: string, path: string, body?: unknown, key?: string): Promise<Response> =>
    send(base, method, path, { authorization, ...(key === undefined ? {} : { 'idempotency-key': key }) }, body);

  /** A customer's USD account, made and funded with `amount` through the entry node. */
  async function fundedAccount(authorization: string, name: string, amount: number): Promise<string> {
    const created = await sendAs(authorization, entry.baseUrl, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: name }, `${name}-customer`);
    assert.equal(created.status, 201);
    const customerId = ((await created.json()) as { id: string }).id;
    const accounts = (await (await sendAs(authorization, entry.baseUrl, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json()) as { data: Array<{ id: string }> };
    const accountId = accounts.data[0]!.id;
    assert.equal((await sendAs(authorization, entry.baseUrl, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount }, `${name}-fund`)).status, 200);
    return accountId;
  }

  const balanceOf = async (authorization: string, base: string, accountId: string): Promise<number | number[]> => {
    const res = await sendAs(authorization, base, 'GET', `/internal-accounts/${accountId}`);
    return res.status === 200 ? ((await res.json()) as { balance: { amount: number } }).balance.amount : [res.status];
  };

  it('serves several environments of one shard, through either node, each with its own money', async () => {
    const shard = shardOf(envId, SHARDS);
    const dataDir = dataDirs[running.indexOf(entry)]!;
    // Platforms made until one's sandbox shares the default sandbox's shard (half of them do).
    const made: PlatformCredentials[] = [];
    while (!made.some((p) => shardOf(`${p.platformId}#sandbox`, SHARDS) === shard)) {
      assert.ok(made.length < 20, `20 platforms and no sandbox in ${shard}`);
      made.push(await createPlatform(entry, dataDir));
    }
    const neighbour = made.find((p) => shardOf(`${p.platformId}#sandbox`, SHARDS) === shard)!;
    // Every environment made is served through both nodes: the entry node places it as its owner does.
    for (const p of made) {
      for (const environment of ['sandbox', 'production'] as const) {
        const authorization = basicHeader(p[environment].tokenId, p[environment].clientSecret);
        for (const node of [entry, owner]) assert.equal((await sendAs(authorization, node.baseUrl, 'GET', '/config')).status, 200, `${p.platformId} ${environment} through ${node.node.nodeId}`);
      }
    }
    const theirs = sandboxAuth(neighbour);
    const mine = await fundedAccount(auth, 'shard-mine', 700);
    const their = await fundedAccount(theirs, 'shard-theirs', 300);
    for (const node of [entry, owner]) {
      assert.equal(await balanceOf(auth, node.baseUrl, mine), 700);
      assert.equal(await balanceOf(theirs, node.baseUrl, their), 300);
      assert.deepEqual(await balanceOf(auth, node.baseUrl, their), [404], "one environment does not see another's account in its shard");
    }
    assert.equal((await sendAs(auth, entry.baseUrl, 'POST', `/sandbox/internal-accounts/${their}/fund`, { amount: 5 }, 'shard-cross-fund')).status, 404);
    assert.equal(await balanceOf(theirs, owner.baseUrl, their), 300, "nor funds it");
  });

  it("API tokens made and revoked through the node that does not serve the shard: every node opens, then refuses, them", async () => {
    const made = await (await send(entry.baseUrl, 'POST', '/tokens', {}, { name: 'cluster viewer', permissions: ['VIEW'] })).json();
    const viewer = basicHeader(made.clientId, made.clientSecret);
    for (const node of [entry, owner]) {
      assert.equal((await sendAs(viewer, node.baseUrl, 'GET', '/config')).status, 200, `opens on ${node.node.nodeId}`);
      const paying = await sendAs(viewer, node.baseUrl, 'POST', '/sandbox/send', { currencyCode: 'USD', amount: 1 });
      assert.equal(paying.status, 403, `a VIEW token cannot move money on ${node.node.nodeId}`);
    }
    assert.equal((await send(entry.baseUrl, 'DELETE', `/tokens/${made.id}`, {})).status, 204);
    // The owner's copy drops it as the owner writes the directory, before the answer; the other node's when the bucket's watch delivers the deletion.
    assert.equal((await sendAs(viewer, owner.baseUrl, 'GET', '/config')).status, 401);
    const deadline = Date.now() + 5_000;
    while ((await sendAs(viewer, entry.baseUrl, 'GET', '/config')).status !== 401) {
      assert.ok(Date.now() < deadline, 'the revocation reaches the other node within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });

  it('an environment made while its shard is open joins it on its first requests: its first entry logged once, by the owner', async () => {
    const made = await createPlatform(entry, dataDirs[running.indexOf(entry)]!);
    const shard = shardOf(`${made.platformId}#sandbox`, SHARDS);
    const [holder, other] = owner.node.owned.includes(shard) ? [owner, entry] : [entry, owner];
    assert.ok(holder.node.owned.includes(shard));
    const before = { holder: await walEntriesOf(holder), other: await walEntriesOf(other) };
    // Eight first requests at once, half through the node that does not serve the shard.
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => sendAs(sandboxAuth(made), (n % 2 === 0 ? holder : other).baseUrl, 'GET', '/config')));
    assert.deepEqual(answers.map((res) => res.status), Array.from({ length: 8 }, () => 200));
    const bodies = await Promise.all(answers.map((res) => res.text()));
    assert.equal(new Set(bodies).size, 1, 'every request saw the same environment');
    assert.deepEqual(
      { holder: (await walEntriesOf(holder)) - before.holder, other: (await walEntriesOf(other)) - before.other },
      { holder: 1, other: 0 },
      "the environment's first entry was logged once, by its shard's owner",
    );
    // And it is that environment's: its money is its own from there on.
    const account = await fundedAccount(sandboxAuth(made), 'joined', 1_234);
    assert.equal(await balanceOf(sandboxAuth(made), holder.baseUrl, account), 1_234);
  });
});
