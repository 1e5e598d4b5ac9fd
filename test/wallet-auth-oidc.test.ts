// OIDC id tokens (src/wallet/oidc.ts): verified against trusted issuers whose keys are
// inline or served by a JWKS endpoint (a node:http server on loopback here, reached through
// an egress whose policy allows private targets), and the sandbox's structural parse.
// Where a key set may be fetched from is test/outbound-key-sets.test.ts's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { OidcVerifier, parseSandboxOidc, type OidcVerifierOptions } from '../src/wallet/oidc.js';
import { OutboundEgress } from '../src/outbound/egress.js';
import { TargetPolicy } from '../src/outbound/target-policy.js';
import { WalletAuthError } from '../src/wallet/errors.js';
import type { OidcIssuerConfig, PublicJwk } from '../actors/platform.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const ISSUER = 'https://id.acme.example';
const INLINE_ISSUER = 'https://login.inline.example';

interface SigningKey {
  privateKey: CryptoKey;
  jwk: JWK;
  kid: string;
  alg: 'ES256' | 'RS256';
}

async function signingKey(kid: string, alg: 'ES256' | 'RS256' = 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }, kid, alg };
}

interface TokenOptions {
  iss?: string;
  aud?: string;
  sub?: string;
  email?: string;
  iatMs?: number;
  expMs?: number;
}

function token(key: SigningKey, options: TokenOptions = {}): Promise<string> {
  const iatMs = options.iatMs ?? NOW - 1000;
  const jwt = new SignJWT({ ...(options.email !== undefined ? { email: options.email } : {}) })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(options.iss ?? ISSUER)
    .setSubject(options.sub ?? 'user-1')
    .setAudience(options.aud ?? 'acme-client')
    .setIssuedAt(Math.floor(iatMs / 1000))
    .setExpirationTime(Math.floor((options.expMs ?? iatMs + 3_600_000) / 1000));
  return jwt.sign(key.privateKey);
}

async function refusedWith(promise: Promise<unknown>, detail: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WalletAuthError, String(error));
    assert.equal(error.reason, 'Invalid OIDC token');
    assert.match(error.detail, detail);
    return true;
  });
}

describe('wallet-auth oidc', () => {
  // The JWKS server is on loopback: allowed as an operator allowing private targets would.
  const egress = new OutboundEgress(new TargetPolicy({ allowPrivate: true }));
  const newVerifier = (options: Omit<OidcVerifierOptions, 'fetcher'> = {}): OidcVerifier => new OidcVerifier({ fetcher: egress, ...options });
  let server: Server;
  let jwksUri = '';
  let served: JWK[] = [];
  let fetches = 0;
  let stall = false;
  let ec: SigningKey;
  let rsa: SigningKey;
  let stranger: SigningKey;
  let inline: SigningKey;
  let issuers: OidcIssuerConfig[];

  before(async () => {
    [ec, rsa, stranger, inline] = await Promise.all([signingKey('ec-1'), signingKey('rsa-1', 'RS256'), signingKey('stranger'), signingKey('inline-1')]);
    served = [ec.jwk, rsa.jwk];
    server = createServer((req, res) => {
      if (stall) return; // never answers: the verifier's fetch timeout must end it
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: served }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
    issuers = [
      { issuer: ISSUER, jwksUri, audience: 'acme-client' },
      { issuer: INLINE_ISSUER, jwks: { keys: [inline.jwk as PublicJwk] } },
    ];
  });
  after(async () => {
    egress.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('verifies tokens signed by a key of the issuer JWKS (fetched once, cached) or of an inline JWKS', async () => {
    const verifier = newVerifier();
    const before = fetches;
    const verified = await verifier.verify(await token(ec, { email: 'ada@example.com' }), issuers, NOW);
    assert.deepEqual(verified, {
      issuer: ISSUER,
      subject: 'user-1',
      email: 'ada@example.com',
      issuedAtMs: Math.floor((NOW - 1000) / 1000) * 1000,
      expiresAtMs: Math.floor((NOW - 1000) / 1000) * 1000 + 3_600_000,
    });
    assert.equal((await verifier.verify(await token(rsa, { sub: 'user-2' }), issuers, NOW)).subject, 'user-2');
    assert.equal(fetches, before + 1, 'the key set is fetched once and cached');
    const fromInline = await verifier.verify(await token(inline, { iss: INLINE_ISSUER, aud: 'anything' }), issuers, NOW);
    assert.equal(fromInline.issuer, INLINE_ISSUER);
    assert.equal(fromInline.email, undefined);
    assert.equal(fetches, before + 1, 'inline keys fetch nothing');
  });

  it('refuses an expired token, a wrong or unconfigured issuer, a wrong audience, a stale or future iat', async () => {
    const verifier = newVerifier();
    await refusedWith(verifier.verify(await token(ec, { iatMs: NOW - 30_000, expMs: NOW - 1000 }), issuers, NOW), /exp/);
    await refusedWith(verifier.verify(await token(ec, { iss: 'https://evil.example' }), issuers, NOW), /not a trusted issuer/);
    // A configured issuer's name on a token signed by another issuer's key.
    await refusedWith(verifier.verify(await token(ec, { iss: INLINE_ISSUER }), issuers, NOW), /no applicable key|JWKSNoMatchingKey/i);
    await refusedWith(verifier.verify(await token(ec, { aud: 'other-client' }), issuers, NOW), /aud/);
    await refusedWith(verifier.verify(await token(ec, { iatMs: NOW - 60_000 }), issuers, NOW), /iat is 60 s old/);
    await refusedWith(verifier.verify(await token(ec, { iatMs: NOW + 10_000 }), issuers, NOW), /iat/);
    // 59 s old and 5 s ahead are still accepted.
    await verifier.verify(await token(ec, { iatMs: NOW - 59_000 }), issuers, NOW);
    await verifier.verify(await token(ec, { iatMs: NOW + 5000 }), issuers, NOW);
    // No issuers configured: nothing verifies.
    await refusedWith(verifier.verify(await token(ec), [], NOW), /not a trusted issuer/);
  });

  it('refuses a key the issuer does not publish, a tampered token, alg none and non-JWTs', async () => {
    const verifier = newVerifier();
    await refusedWith(verifier.verify(await token(stranger), issuers, NOW), /no applicable key|JWKSNoMatchingKey/i);
    // The stranger's key under a published kid: the signature does not verify.
    await refusedWith(verifier.verify(await token({ ...stranger, kid: 'ec-1' }), issuers, NOW), /signature/i);
    const good = await token(ec);
    const [header, payload, signature] = good.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url');
    await refusedWith(verifier.verify(`${header}.${forged}.${signature}`, issuers, NOW), /signature/i);
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    await refusedWith(verifier.verify(`${none}.${payload}.`, issuers, NOW), /compact JWT/);
    await refusedWith(verifier.verify(`${none}.${payload}.${signature}`, issuers, NOW), /alg/i);
    for (const bad of ['', 'sandbox-valid-oidc-token', 'a.b', 'a.b.c', `${header}.${payload}`, 'x'.repeat(20_000)]) {
      await refusedWith(verifier.verify(bad, issuers, NOW), /JWT|longer/);
    }
  });

  it('an unknown kid refetches the key set (after the cooldown), so a rotated key verifies', async () => {
    const verifier = newVerifier();
    const rotated = await signingKey('ec-2');
    await verifier.verify(await token(ec), issuers, NOW);
    served = [ec.jwk, rsa.jwk, rotated.jwk];
    try {
      // Within jose's 30 s cooldown the cached set answers: the new key is unknown yet.
      await refusedWith(verifier.verify(await token(rotated), issuers, NOW), /no applicable key|JWKSNoMatchingKey/i);
      // A fresh verifier (as after a restart) fetches and finds it.
      assert.equal((await newVerifier().verify(await token(rotated), issuers, NOW)).issuer, ISSUER);
    } finally {
      served = [ec.jwk, rsa.jwk];
    }
  });

  it('a JWKS endpoint that does not answer is refused after the fetch timeout', async () => {
    const verifier = newVerifier({ fetchTimeoutMs: 100 });
    stall = true;
    try {
      await refusedWith(verifier.verify(await token(ec), issuers, NOW), /timed out|timeout/i);
    } finally {
      stall = false;
    }
  });

  it('sandbox: a structurally valid JWT with a configured or well-known iss, signature unchecked', async () => {
    const unsigned = (claims: Record<string, unknown>): string =>
      `${Buffer.from('{"alg":"RS256","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2lnbmF0dXJl`;
    assert.deepEqual(parseSandboxOidc(unsigned({ iss: 'https://accounts.google.com', sub: '123', email: 'ada@example.com' }), []), {
      issuer: 'https://accounts.google.com',
      subject: '123',
      email: 'ada@example.com',
    });
    assert.equal(parseSandboxOidc(unsigned({ iss: 'https://appleid.apple.com' }), []).issuer, 'https://appleid.apple.com');
    assert.equal(parseSandboxOidc(unsigned({ iss: ISSUER }), [ISSUER]).issuer, ISSUER);
    assert.equal(parseSandboxOidc(await token(stranger), [ISSUER]).subject, 'user-1');
    const refusedParse = (value: string, known: string[], detail: RegExp): void => {
      assert.throws(
        () => parseSandboxOidc(value, known),
        (error: unknown) => error instanceof WalletAuthError && error.reason === 'Invalid OIDC token' && detail.test(error.detail),
      );
    };
    refusedParse(unsigned({ iss: ISSUER }), [], /not recognised/);
    refusedParse(unsigned({ sub: 'x' }), [ISSUER], /not recognised/);
    refusedParse(unsigned({ iss: 'https://accounts.google.com.evil.example' }), [], /not recognised/);
    refusedParse('sandbox-valid-oidc-token', [], /compact JWT/);
    refusedParse(`${Buffer.from('not json').toString('base64url')}.e30.c2ln`, [], /not a JWT/);
    refusedParse(`${Buffer.from('{"typ":"JWT"}').toString('base64url')}.${Buffer.from('{"iss":"https://accounts.google.com"}').toString('base64url')}.c2ln`, [], /alg/);
    refusedParse(`${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('[1]').toString('base64url')}.c2ln`, [], /not a JWT/);
  });
});
