// Where an OIDC issuer's key set (embeddedWalletConfig.oidcIssuers[].jwksUri) may be fetched
// from, seen from outside: a production token must not make the service connect into its
// own network, neither by configuring a jwksUri that leads there (PATCH /config refuses it,
// 400 naming the field) nor by presenting an OAUTH token of an issuer whose jwksUri was
// stored earlier, when the operator allowed private targets, or whose name resolves inward
// only later (the fetch is refused before connecting). The rule is the webhooks' one
// (src/outbound/target-policy.ts); this suite holds that key sets go through it.
//
// A loopback listener counts the connections it gets, and every TCP connection attempt of
// the process is watched (test/support/outbound.ts): a refusal means no attempt at all.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { ManualClock } from '../src/engine/clock.js';
import { OutboundEgress } from '../src/outbound/egress.js';
import { TargetPolicy } from '../src/outbound/target-policy.js';
import { MAX_KEY_SET_BYTES, OidcVerifier } from '../src/wallet/oidc.js';
import { WalletAuthError } from '../src/wallet/errors.js';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import { ConnectionWatch, FakeDns, PUBLIC_LOOKING, startListener, type Listener } from './support/outbound.js';
import { assertError, assertInvalid, assertStatus, createCustomer, customerAccounts, read } from './support/assertions.js';

const ISSUER = 'https://id.acme.test';
const FIELD = 'embeddedWalletConfig.oidcIssuers.0.jwksUri';
const clock = new ManualClock(Date.UTC(2026, 2, 1));

const watch = new ConnectionWatch().start();

async function service(options: Parameters<typeof startTestService>[0]): Promise<TestService> {
  const svc = await startTestService({ clock, ...options });
  watch.servicePorts.add(svc.service.http.port);
  return svc;
}

/** An unsigned JWT naming `issuer`, fresh at the service's clock: the probe's token. */
function unsignedToken(issuer = ISSUER): string {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  const iat = Math.floor(clock.now() / 1000) - 1;
  return `${part({ alg: 'RS256', kid: 'probe', typ: 'JWT' })}.${part({ iss: issuer, sub: 'probe', iat, exp: iat + 3600 })}.${part({ sig: 'none' })}`;
}

let customers = 0;

/** A production embedded-wallet account with no credential yet. */
async function walletAccount(svc: TestService): Promise<string> {
  const customer = await createCustomer(svc, { email: `user-${++customers}@example.com` }, 'production');
  return (await customerAccounts(svc, customer.id, 'production')).find((a) => a.type === 'EMBEDDED_WALLET').id;
}

function presentOauth(svc: TestService, accountId: string, oidcToken: string) {
  return svc.request('POST', '/auth/credentials', { auth: 'production', body: { type: 'OAUTH', accountId, oidcToken } });
}

const issuerWith = (jwksUri: string) => ({ embeddedWalletConfig: { oidcIssuers: [{ issuer: ISSUER, jwksUri }] } });

/** Loopback and private key-set URLs however written (P is the listener's port); http is allowed on loopback only, so the rest are https. */
function inwardForms(p: number): string[] {
  return [
    `http://127.0.0.1:${p}/jwks`,
    `http://0x7f000001:${p}/jwks`,
    `http://2130706433:${p}/jwks`,
    `http://127.1:${p}/jwks`,
    `http://localhost:${p}/jwks`,
    `http://[::1]:${p}/jwks`,
    `https://127.0.0.1:${p}/jwks`,
    `https://[::ffff:127.0.0.1]:${p}/jwks`,
    `https://loopback.test:${p}/jwks`,
    `https://mixed.test:${p}/jwks`,
    'https://10.0.0.1/jwks',
    'https://169.254.169.254/latest/jwks',
    'https://[fd00::1]/jwks',
    'https://lan.test/jwks',
    'https://metadata.test/jwks',
  ];
}

describe('a production token cannot point the key-set fetch inward', () => {
  const dns = new FakeDns();
  const svc = serviceForSuite({ clock, outboundResolver: dns.resolver });
  let listener: Listener;
  before(async () => {
    watch.servicePorts.add(svc.service.http.port);
    listener = await startListener();
  });
  after(async () => {
    await listener.close();
  });

  it('PATCH /config refuses a loopback or private jwksUri, however written, 400 naming the field; the OAUTH probe that follows connects nowhere', async () => {
    const mark = watch.mark;
    const before = await read(svc, '/config', 'production');
    for (const jwksUri of inwardForms(listener.port)) {
      const res = await svc.request('PATCH', '/config', { auth: 'production', body: issuerWith(jwksUri) });
      assertInvalid(res, FIELD);
      assert.match(res.body.message, /public addresses only/, jwksUri);
      assert.equal(await read(svc, '/config', 'production'), before, `${jwksUri}: the configuration is unchanged`);
    }
    const accountId = await walletAccount(svc);
    assertError(await presentOauth(svc, accountId, unsignedToken()), 401, 'UNAUTHORIZED');
    assert.equal(listener.connections, 0, 'the listener saw no connection');
    assert.deepEqual(watch.outboundSince(mark), [], 'no connection was even tried');
  });

  it('a name that resolves public when configured and to loopback when fetched is refused at the fetch, before connecting', async () => {
    dns.set('keys.rebind.test', PUBLIC_LOOKING);
    assertStatus(await svc.request('PATCH', '/config', { auth: 'production', body: issuerWith(`https://keys.rebind.test:${listener.port}/jwks`) }), 200);
    dns.set('keys.rebind.test', '127.0.0.1');
    const mark = watch.mark;
    const asked = dns.asked.length;
    const accountId = await walletAccount(svc);
    assertError(await presentOauth(svc, accountId, unsignedToken()), 401, 'UNAUTHORIZED');
    assert.ok(dns.asked.slice(asked).includes('keys.rebind.test'), 'the fetch resolved the name again');
    assert.equal(listener.connections, 0);
    assert.deepEqual(watch.outboundSince(mark), []);
  });

  it('sandbox, which verifies no token, may name a loopback key set as its webhooks may, and nothing else inward', async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: issuerWith(`http://127.0.0.1:${listener.port}/jwks`) }), 200);
    for (const jwksUri of ['https://10.0.0.1/jwks', 'https://lan.test/jwks', 'https://169.254.169.254/jwks']) {
      assertInvalid(await svc.request('PATCH', '/config', { body: issuerWith(jwksUri) }), FIELD);
    }
  });
});

describe('a key set stored while private targets were allowed', () => {
  it('is fetched while they are, and refused at connect time once the operator stops allowing them', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const listener = await startListener((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    const signed = (): Promise<string> => {
      const iat = Math.floor(clock.now() / 1000) - 1;
      return new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(ISSUER).setSubject('ada').setIssuedAt(iat).setExpirationTime(iat + 3600).sign(privateKey);
    };
    let svc = await service({ allowPrivateTargets: true });
    try {
      for (const jwksUri of [listener.url('/jwks'), `http://localhost:${listener.port}/jwks`]) {
        assertStatus(await svc.request('PATCH', '/config', { auth: 'production', body: issuerWith(jwksUri) }), 200);
        // Allowed: the key set is fetched from the listener and the token verifies.
        const connections = listener.connections;
        assertStatus(await presentOauth(svc, await walletAccount(svc), await signed()), 201);
        assert.ok(listener.connections > connections, `${jwksUri}: the allowed fetch reached the listener`);

        await svc.stop({ keepData: true });
        svc = await service({ dataDir: svc.dataDir });
        const mark = watch.mark;
        const seen = listener.connections;
        for (const token of [await signed(), unsignedToken()]) {
          assertError(await presentOauth(svc, await walletAccount(svc), token), 401, 'UNAUTHORIZED');
        }
        assert.equal(listener.connections, seen, `${jwksUri}: no connection reached the listener`);
        assert.deepEqual(watch.outboundSince(mark), [], `${jwksUri}: no connection was even tried`);

        await svc.stop({ keepData: true });
        svc = await service({ dataDir: svc.dataDir, allowPrivateTargets: true });
      }
    } finally {
      await svc.stop();
      await listener.close();
    }
  });
});

describe('a key-set fetch through the egress', () => {
  it('follows no redirect and refuses an answer larger than MAX_KEY_SET_BYTES', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const keys = [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }];
    const target = await startListener((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys })));
    const redirecting = await startListener((_req, res) => res.writeHead(302, { location: target.url('/jwks') }).end());
    const padded = JSON.stringify({ keys, padding: 'x'.repeat(MAX_KEY_SET_BYTES) });
    const oversized = await startListener((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(padded));
    // Loopback listeners: allowed here as by an operator allowing private targets.
    const egress = new OutboundEgress(new TargetPolicy({ allowPrivate: true }));
    const verifier = new OidcVerifier({ fetcher: egress });
    const iat = Math.floor(clock.now() / 1000) - 1;
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(ISSUER).setSubject('ada').setIssuedAt(iat).setExpirationTime(iat + 3600).sign(privateKey);
    const refusedFor = async (listener: Listener, detail: RegExp): Promise<void> => {
      await assert.rejects(verifier.verify(token, [{ issuer: ISSUER, jwksUri: listener.url('/jwks') }], clock.now()), (err: unknown) => {
        assert.ok(err instanceof WalletAuthError, String(err));
        assert.match(err.detail, detail);
        return true;
      });
    };
    try {
      await refusedFor(redirecting, /answered 302/);
      assert.equal(target.connections, 0, 'where the redirect points saw nothing');
      await refusedFor(oversized, /larger than 262144 bytes/);
      assert.equal((await verifier.verify(token, [{ issuer: ISSUER, jwksUri: target.url('/jwks') }], clock.now())).subject, 'ada');
    } finally {
      egress.close();
      await Promise.all([target.close(), redirecting.close(), oversized.close()]);
    }
  });
});

describe('nothing left the machine', () => {
  it('every connection attempt of this suite went to loopback', () => {
    watch.stop();
    assert.ok(watch.attempts.length > 0, 'the watcher saw the suite connect');
    assert.deepEqual(watch.offMachine(), []);
  });
});
