// Where webhooks may go (src/outbound/target-policy.ts, egress.ts): production only to
// public addresses, sandbox also to loopback, OUTBOUND_ALLOW_PRIVATE_TARGETS lifts the rule.
// Refused in PATCH /config and POST /webhooks/test with a 400 naming the field, however the
// address is written, and again at every delivery against the address connected to.
//
// Nothing here may leave the machine: DNS is faked (a name may "resolve" to a public-looking
// address, but no test lets a connection follow it), and every TCP connection attempt the
// process makes is watched through diagnostics_channel; the last test asserts all of them
// went to loopback, and the refusal tests assert that none was even tried.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { configFromEnv, ConfigError } from '../src/config.js';
import { classifyAddress, TargetPolicy } from '../src/outbound/target-policy.js';
import { OutboundEgress } from '../src/outbound/egress.js';
import { startTestService, type TestService } from './support/service.js';
import { ConnectionWatch, FakeDns, PUBLIC_LOOKING, startListener, type Listener } from './support/outbound.js';
import { assertInvalid, assertStatus, createCustomer, read, type Auth } from './support/assertions.js';
import { accountIn, fundedCustomer, until } from './support/money.js';

// ---- every TCP connection attempt of this process ------------------------------------------

const watch = new ConnectionWatch().start();
const attempts = watch.attempts;
const outboundSince = (mark: number) => watch.outboundSince(mark);

async function service(options: Parameters<typeof startTestService>[0]): Promise<TestService> {
  const svc = await startTestService(options);
  watch.servicePorts.add(svc.service.http.port);
  return svc;
}

// ---- the address forms ----------------------------------------------------------------------

/** Loopback however written: refused in production, allowed in sandbox (P is the listener's port). */
function loopbackForms(p: number): string[] {
  return [
    `http://127.0.0.1:${p}/hook`,
    `https://127.0.0.1:${p}/hook`,
    `http://127.0.0.254:${p}/hook`,
    `http://localhost:${p}/hook`,
    `http://LOCALHOST:${p}/hook`,
    `http://[::1]:${p}/hook`,
    `http://0x7f000001:${p}/hook`,
    `http://2130706433:${p}/hook`,
    `http://017700000001:${p}/hook`,
    `http://0177.0.0.1:${p}/hook`,
    `http://127.1:${p}/hook`,
    `http://[::ffff:127.0.0.1]:${p}/hook`,
    `http://[::ffff:7f00:1]:${p}/hook`,
    `http://loopback.test:${p}/hook`,
    `http://mixed.test:${p}/hook`, // one public address does not make the loopback one allowed
  ];
}

/** Neither public nor loopback: refused in production and sandbox alike. */
function internalForms(p: number): string[] {
  return [
    `http://0.0.0.0:${p}/hook`,
    `http://0:${p}/hook`,
    `http://[::]:${p}/hook`,
    'http://10.0.0.1/',
    'http://10.255.255.255:8080/',
    'http://172.16.0.1/',
    'http://172.31.255.254/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://169.254.169.254/latest',
    'http://0xa9fea9fe/latest',
    'http://2852039166/latest',
    'http://[::ffff:169.254.169.254]/latest',
    'http://[::ffff:a00:1]/',
    'http://[fd00::1]/',
    'http://[fc00::1]/',
    'http://[fe80::1]/',
    'http://[fec0::1]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    `http://[64:ff9b::127.0.0.1]:${p}/hook`,
    'http://[2002:a00:1::1]/',
    `http://[2002:7f00:1::]:${p}/hook`,
    'http://224.0.0.1/',
    'http://[ff02::1]/',
    'http://255.255.255.255/',
    'http://240.0.0.1/',
    'http://192.0.0.8/',
    'http://192.0.2.1/',
    'http://198.18.0.1/',
    'http://198.51.100.1/',
    'http://203.0.113.1/',
    'http://[2001:db8::1]/',
    'http://[::a00:1]/',
    'http://lan.test/',
    'http://metadata.test/latest',
    'http://ula.test/',
  ];
}

/** Not a webhook URL at all: whitespace around or inside, credentials, another scheme. */
function malformedForms(p: number): string[] {
  return [
    ` http://127.0.0.1:${p}/hook`,
    `http://127.0.0.1:${p}/hook `,
    `\thttp://127.0.0.1:${p}/hook`,
    `http://127.0.0.1:${p}/hook\n`,
    `http://127.0.\t0.1:${p}/hook`,
    ' https://hooks.example.com/',
    `http://user:secret@127.0.0.1:${p}/hook`,
    'https://user@hooks.example.com/',
    `ftp://127.0.0.1:${p}/hook`,
    'file:///etc/passwd',
    `gopher://127.0.0.1:${p}/`,
  ];
}

// ---- unit: classification and the policy's rule ------------------------------------------------

describe('address classification', () => {
  it('public unicast is public; loopback is loopback however written; the rest is non-public', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', PUBLIC_LOOKING, '100.128.0.1', '172.32.0.1', '198.20.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
      assert.equal(classifyAddress(address).kind, 'public', address);
    }
    for (const address of ['127.0.0.1', '127.255.255.254', '::1', '[::1]', '::ffff:127.0.0.1', '::ffff:7f00:1']) {
      assert.equal(classifyAddress(address).kind, 'loopback', address);
    }
    const nonPublic: Record<string, RegExp> = {
      '0.0.0.0': /this network/,
      '10.1.2.3': /private/,
      '172.16.0.1': /private/,
      '192.168.0.1': /private/,
      '100.64.0.1': /shared/,
      '169.254.169.254': /link-local/,
      '192.0.0.8': /IETF/,
      '192.0.2.1': /documentation/,
      '198.18.0.1': /benchmarking/,
      '198.51.100.1': /documentation/,
      '203.0.113.1': /documentation/,
      '224.0.0.1': /multicast/,
      '240.0.0.1': /reserved/,
      '255.255.255.255': /broadcast/,
      '::': /unspecified/,
      '::ffff:10.0.0.1': /private/,
      '::ffff:169.254.169.254': /link-local/,
      '64:ff9b::a00:1': /NAT64 or 6to4\) of private/,
      '64:ff9b::7f00:1': /NAT64 or 6to4\) of loopback/,
      '2002:a9fe:a9fe::': /NAT64 or 6to4\) of link-local/,
      '2002:7f00:1::1': /NAT64 or 6to4\) of loopback/,
      'fd00::1': /unique local/,
      'fe80::1': /link-local/,
      'fe80::1%eth0': /link-local/,
      'ff02::1': /multicast/,
      '2001:db8::1': /documentation/,
      '2001::1': /Teredo/,
      '::a00:1': /not global unicast/,
      '64:ff9b:1::a00:1': /local-use NAT64/,
    };
    for (const [address, range] of Object.entries(nonPublic)) {
      const found = classifyAddress(address);
      assert.equal(found.kind, 'non-public', address);
      assert.match(found.range, range, address);
    }
    assert.throws(() => classifyAddress('localhost'), TypeError);
  });

  it('production allows public only; sandbox public and loopback; OUTBOUND_ALLOW_PRIVATE_TARGETS everything', () => {
    const strict = new TargetPolicy();
    const lifted = new TargetPolicy({ allowPrivate: true });
    assert.equal(strict.refusal('production', '8.8.8.8'), undefined);
    assert.match(strict.refusal('production', '127.0.0.1') ?? '', /loopback .*public addresses only/);
    assert.equal(strict.refusal('sandbox', '127.0.0.1'), undefined);
    assert.equal(strict.refusal('sandbox', '::1'), undefined);
    assert.match(strict.refusal('sandbox', '10.0.0.1') ?? '', /private .*public or loopback addresses only/);
    assert.match(strict.refusal('sandbox', '64:ff9b::7f00:1') ?? '', /NAT64/, 'a translated loopback is not this machine');
    for (const address of ['127.0.0.1', '10.0.0.1', '169.254.169.254', 'fd00::1']) {
      assert.equal(lifted.refusal('production', address), undefined, address);
    }
  });

  it('OUTBOUND_ALLOW_PRIVATE_TARGETS (or its older name WEBHOOK_ALLOW_PRIVATE_TARGETS) is strictly true or false; a bad value refuses to start naming it', () => {
    assert.equal(configFromEnv({}).allowPrivateTargets, false);
    for (const name of ['OUTBOUND_ALLOW_PRIVATE_TARGETS', 'WEBHOOK_ALLOW_PRIVATE_TARGETS']) {
      assert.equal(configFromEnv({ [name]: '' }).allowPrivateTargets, false, name);
      assert.equal(configFromEnv({ [name]: 'false' }).allowPrivateTargets, false, name);
      assert.equal(configFromEnv({ [name]: 'true' }).allowPrivateTargets, true, name);
      for (const bad of ['TRUE', '1', 'yes', ' true', 'on']) {
        assert.throws(() => configFromEnv({ [name]: bad }), (err: unknown) => err instanceof ConfigError && err.message.includes(name), `${name}=${bad}`);
      }
    }
    assert.equal(configFromEnv({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).allowPrivateTargets, true);
    assert.throws(
      () => configFromEnv({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'false', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }),
      (err: unknown) => err instanceof ConfigError && /OUTBOUND_ALLOW_PRIVATE_TARGETS.*WEBHOOK_ALLOW_PRIVATE_TARGETS.*disagree/.test(err.message),
    );
  });
});

// ---- unit: the poster refuses before connecting ---------------------------------------------------

describe('webhook egress', () => {
  const dns = new FakeDns();
  const egress = new OutboundEgress(new TargetPolicy({ resolver: dns.resolver }));
  let listener: Listener;
  before(async () => {
    listener = await startListener();
  });
  after(async () => {
    egress.close();
    await listener.close();
  });
  const post = (environment: 'sandbox' | 'production', url: string) =>
    egress.post({ environment, url, body: '{}', headers: { 'content-type': 'application/json' }, timeoutMs: 2_000 });

  it('an IP literal is refused before any request: no lookup, no connection attempt', async () => {
    const mark = attempts.length;
    for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest', 'http://[fd00::1]/', listener.url()]) {
      const outcome = await post('production', url);
      assert.equal(outcome.statusCode, 0, url);
      assert.ok(outcome.refused !== undefined && outcome.refused.length > 0, `${url}: a reason`);
    }
    assert.deepEqual(dns.asked, []);
    assert.deepEqual(outboundSince(mark), []);
    assert.equal(listener.connections, 0);
  });

  it('a name is refused in the lookup when any address it resolves to is refused: no connection attempt', async () => {
    const mark = attempts.length;
    for (const name of ['lan.test', 'metadata.test', 'ula.test', 'mixed.test', 'localhost']) {
      const outcome = await post('production', `http://${name}:${listener.port}/hook`);
      assert.equal(outcome.statusCode, 0, name);
      assert.match(outcome.refused ?? '', new RegExp(`^${name} resolves to `), name);
      assert.doesNotMatch(outcome.refused ?? '', /\d+\.\d+\.\d+\.\d+ /, 'the resolved address is not told');
    }
    assert.deepEqual(dns.asked, ['lan.test', 'metadata.test', 'ula.test', 'mixed.test', 'localhost']);
    assert.deepEqual(outboundSince(mark), []);
    assert.equal(listener.connections, 0);
  });

  it('sandbox reaches loopback, by literal and by name; a name that does not resolve is no answer, not a refusal', async () => {
    assert.equal((await post('sandbox', listener.url())).statusCode, 200);
    assert.equal((await post('sandbox', `http://localhost:${listener.port}/hook`)).statusCode, 200);
    assert.equal(listener.requests, 2);
    const unknown = await post('sandbox', 'http://nowhere.test/hook');
    assert.equal(unknown.statusCode, 0);
    assert.equal(unknown.refused, undefined);
  });
});

describe('webhook egress limits', () => {
  it('reads at most 64 KiB of an answer, and cuts off an endpoint that does not answer in time', async () => {
    const egress = new OutboundEgress(new TargetPolicy());
    // An answer that never ends: the status counts once the bound is read.
    const endless = await startListener((_req, res) => {
      res.writeHead(201);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const write = (): void => {
        if (!res.destroyed) res.write(chunk, () => setImmediate(write));
      };
      write();
    });
    const silent = await startListener(() => undefined);
    try {
      const post = (url: string, timeoutMs: number) => egress.post({ environment: 'sandbox', url, body: '{}', headers: {}, timeoutMs });
      const read = await post(endless.url(), 5_000);
      assert.equal(read.statusCode, 201);
      assert.ok(read.ms < 5_000);
      const cut = await post(silent.url(), 200);
      assert.equal(cut.statusCode, 0);
      assert.equal(cut.refused, undefined);
      assert.ok(cut.ms >= 150 && cut.ms < 5_000, `cut off after ${cut.ms} ms`);
    } finally {
      egress.close();
      await endless.close();
      await silent.close();
    }
  });
});

describe('webhook egress over kept-alive connections', () => {
  it('a request whose reused connection is reset before any answer goes once more on a new one; a reset of a new connection is no answer', async () => {
    const egress = new OutboundEgress(new TargetPolicy());
    // Answers on a kept-alive connection, then resets it as the next request arrives on it:
    // what a receiver closing an idle connection just as it is reused looks like.
    const closesIdle = await startListener((req, res) => {
      if (closesIdle.requests === 2) req.socket.resetAndDestroy();
      else res.writeHead(200).end();
    });
    const resetsAll = await startListener((req) => req.socket.resetAndDestroy());
    try {
      const post = (url: string) => egress.post({ environment: 'sandbox', url, body: '{"n":1}', headers: {}, timeoutMs: 5_000 });
      assert.equal((await post(closesIdle.url())).statusCode, 200);
      assert.equal((await post(closesIdle.url())).statusCode, 200, 'answered on a new connection');
      assert.deepEqual({ requests: closesIdle.requests, connections: closesIdle.connections }, { requests: 3, connections: 2 });
      assert.equal((await post(resetsAll.url())).statusCode, 0);
      assert.equal(resetsAll.requests, 1, 'a reset of a new connection is not sent again');
    } finally {
      egress.close();
      await closesIdle.close();
      await resetsAll.close();
    }
  });
});

// ---- routes --------------------------------------------------------------------------------------

async function refusedEverywhere(svc: TestService, url: string, auth: 'sandbox' | 'production'): Promise<void> {
  const before = await read(svc, '/config', auth);
  const patched = await svc.request('PATCH', '/config', { body: { webhookEndpoint: url }, auth });
  assertInvalid(patched, 'webhookEndpoint');
  assert.equal(await read(svc, '/config', auth), before, `${JSON.stringify(url)}: the configuration is unchanged`);
  assertInvalid(await svc.request('POST', '/webhooks/test', { body: { url }, auth }), 'url');
}

describe('PATCH /config and POST /webhooks/test refuse internal targets', () => {
  const dns = new FakeDns();
  let svc: TestService;
  let listener: Listener;
  before(async () => {
    svc = await service({ outboundResolver: dns.resolver });
    listener = await startListener();
  });
  after(async () => {
    await svc.stop();
    await listener.close();
  });

  it('production: loopback, private, link-local and reserved, however written, are 400 naming the field and nothing is sent', async () => {
    const mark = attempts.length;
    const forms = [...loopbackForms(listener.port), ...internalForms(listener.port), ...malformedForms(listener.port)];
    for (const url of forms) await refusedEverywhere(svc, url, 'production');
    const refused = await svc.request('PATCH', '/config', { body: { webhookEndpoint: 'http://169.254.169.254/latest' }, auth: 'production' });
    assert.match(refused.body.message, /webhookEndpoint: 169\.254\.169\.254 is link-local/);
    assert.equal(listener.connections, 0, 'the listener saw no connection');
    assert.deepEqual(outboundSince(mark), [], 'no connection was even tried');
    // DNS was asked only about names, never about a literal however it was written.
    assert.deepEqual(new Set(dns.asked), new Set(['localhost', 'loopback.test', 'mixed.test', 'lan.test', 'metadata.test', 'ula.test']));
  });

  it('sandbox: everything internal but loopback is refused the same way', async () => {
    const mark = attempts.length;
    for (const url of [...internalForms(listener.port), ...malformedForms(listener.port)]) await refusedEverywhere(svc, url, 'sandbox');
    assert.equal(listener.connections, 0);
    assert.deepEqual(outboundSince(mark), []);
  });

  it('sandbox: loopback is allowed, configured and test-sent', async () => {
    for (const url of [listener.url(), `http://localhost:${listener.port}/hook`, `http://0x7f000001:${listener.port}/hook`]) {
      const res = await svc.request('PATCH', '/config', { body: { webhookEndpoint: url } });
      assertStatus(res, 200);
      assert.equal(res.body.webhookEndpoint, url, 'stored as given');
      const sent = await svc.request('POST', '/webhooks/test', { body: {} });
      assert.deepEqual(sent.body, { url, delivered: true, statusCode: 200 });
    }
    assert.equal(listener.requests, 3);
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: '' } }), 200);
  });

  it('a public name, and one that does not resolve (yet), are accepted: every connection is checked again', async () => {
    dns.set('hooks.partner.test', PUBLIC_LOOKING);
    for (const url of ['https://hooks.partner.test/hook', 'https://not-yet.partner.test/hook']) {
      const res = await svc.request('PATCH', '/config', { body: { webhookEndpoint: url }, auth: 'production' });
      assertStatus(res, 200);
      assert.equal(res.body.webhookEndpoint, url);
    }
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: '' }, auth: 'production' }), 200);
  });

  it('a stored endpoint that the rule refuses is refused when test-sent without a url', async () => {
    // Written past the route (as a store from before the rule would hold it).
    const world = svc.service.services.world;
    const envId = `${svc.credentials.platformId}#production`;
    const env = world.envs.get(envId)!;
    await svc.service.services.engine.exec([envId], () => ({
      events: [{ type: 'config.updated', envId, config: { ...env.config, webhookEndpoint: listener.url() } }],
      reply: () => undefined,
    }));
    const mark = attempts.length;
    const connections = listener.connections;
    assertInvalid(await svc.request('POST', '/webhooks/test', { body: {}, auth: 'production' }), 'url');
    assert.equal(listener.connections, connections);
    assert.deepEqual(outboundSince(mark), []);
    await svc.service.services.engine.exec([envId], () => ({ events: [{ type: 'config.updated', envId, config: env.config }], reply: () => undefined }));
  });
});

// ---- delivery: the check runs again against the address connected to -------------------------------

/** A production webhook event: a transfer-in from the customer's bank account completes at once. */
async function productionEvent(svc: TestService): Promise<void> {
  const auth: Auth = 'production';
  const customer = await createCustomer(svc, {}, auth);
  const usd = await accountIn(svc, customer.id, 'USD', auth);
  const accountInfo = {
    accountType: 'USD_ACCOUNT',
    accountNumber: '987654123',
    routingNumber: '021000021',
    bankAccountType: 'CHECKING',
    beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' },
  };
  const external = await svc.request('POST', '/customers/external-accounts', { body: { currency: 'USD', accountInfo, customerId: customer.id }, auth });
  assertStatus(external, 201);
  const res = await svc.request('POST', '/transfer-in', { body: { source: { accountId: external.body.id }, destination: { accountId: usd.id }, amount: 100 }, auth });
  assertStatus(res, 201);
}

function eventsOf(svc: TestService, environment: 'sandbox' | 'production') {
  const world = svc.service.services.world;
  return [...world.webhookEvents.idsIn(`${svc.credentials.platformId}#${environment}`)].map((id) => world.webhookEvents.get(id)!);
}

describe('delivery checks the address it connects to', () => {
  it('production: DNS that answers public at PATCH and loopback at delivery is refused there; nothing connects', async () => {
    const dns = new FakeDns();
    const listener = await startListener();
    const svc = await service({ clock: new ManualClock(), outboundResolver: dns.resolver });
    try {
      dns.set('hooks.rebind.test', PUBLIC_LOOKING);
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: `http://hooks.rebind.test:${listener.port}/hook` }, auth: 'production' }), 200);
      dns.set('hooks.rebind.test', '127.0.0.1');
      const mark = attempts.length;
      await productionEvent(svc);
      await until(svc, () => eventsOf(svc, 'production').some((e) => e.attempts.length > 0), 'a delivery attempt');
      const tried = eventsOf(svc, 'production').find((e) => e.attempts.length > 0)!;
      assert.equal(tried.deliveryStatus, 'PENDING', 'retried later, as any failed try');
      assert.deepEqual(tried.attempts.map((a) => a.statusCode), [0]);
      assert.equal(listener.connections, 0);
      assert.deepEqual(outboundSince(mark), []);
      assert.ok(dns.asked.includes('hooks.rebind.test'), 'the delivery resolved the name again');
      assert.ok(svc.reportLines.some((line) => /refused: hooks\.rebind\.test resolves to loopback/.test(line)), 'the refusal is in the log');
    } finally {
      await svc.stop();
      await listener.close();
    }
  });

  it('production with OUTBOUND_ALLOW_PRIVATE_TARGETS=true delivers to a loopback listener', async () => {
    const listener = await startListener();
    const svc = await service({ clock: new ManualClock(), allowPrivateTargets: true });
    try {
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: listener.url() }, auth: 'production' }), 200);
      await productionEvent(svc);
      await until(svc, () => eventsOf(svc, 'production').every((e) => e.deliveryStatus === 'DELIVERED'), 'production events delivered');
      assert.ok(listener.requests >= 1);
      assert.ok(eventsOf(svc, 'production').length >= 1);
    } finally {
      await svc.stop();
      await listener.close();
    }
  });

  it('sandbox delivers to loopback, and refuses a name that turns to 10.0.0.1 before connecting', async () => {
    const dns = new FakeDns();
    const listener = await startListener();
    const svc = await service({ clock: new ManualClock(), outboundResolver: dns.resolver });
    try {
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: `http://localhost:${listener.port}/hook` } }), 200);
      await fundedCustomer(svc, 100);
      await until(svc, () => eventsOf(svc, 'sandbox').every((e) => e.deliveryStatus === 'DELIVERED'), 'sandbox events delivered');
      const delivered = listener.requests;
      assert.ok(delivered >= 2, 'the funding and its balance');

      dns.set('hooks.lan.test', PUBLIC_LOOKING);
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: 'http://hooks.lan.test/hook' } }), 200);
      dns.set('hooks.lan.test', '10.0.0.1');
      const mark = attempts.length;
      await fundedCustomer(svc, 100);
      await until(svc, () => eventsOf(svc, 'sandbox').some((e) => e.attempts.some((a) => a.statusCode === 0)), 'a refused attempt');
      assert.equal(listener.requests, delivered);
      assert.deepEqual(outboundSince(mark), [], 'no connection to 10.0.0.1 was tried');
    } finally {
      await svc.stop();
      await listener.close();
    }
  });

  it('redirects are not followed: a 302 is an answer, and where it points sees nothing', async () => {
    const target = await startListener();
    const redirecting = await startListener((_req, res) => res.writeHead(302, { location: target.url() }).end());
    const svc = await service({ clock: new ManualClock() });
    try {
      const sent = await svc.request('POST', '/webhooks/test', { body: { url: redirecting.url() } });
      assert.deepEqual(sent.body, { url: redirecting.url(), delivered: false, statusCode: 302 });
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: redirecting.url() } }), 200);
      await fundedCustomer(svc, 100);
      await until(svc, () => eventsOf(svc, 'sandbox').some((e) => e.attempts.length > 0), 'a delivery attempt');
      assert.equal(eventsOf(svc, 'sandbox').find((e) => e.attempts.length > 0)!.attempts[0]!.statusCode, 302);
      assert.ok(redirecting.requests >= 2);
      assert.equal(target.connections, 0, 'the redirect target saw nothing');
    } finally {
      await svc.stop();
      await target.close();
      await redirecting.close();
    }
  });
});

describe('nothing left the machine', () => {
  it('every connection attempt of this suite went to loopback', () => {
    watch.stop();
    assert.ok(attempts.length > 0, 'the watcher saw the suite connect');
    assert.deepEqual(watch.offMachine(), []);
  });
});
