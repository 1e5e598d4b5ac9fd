// Wallet cryptography benchmark: for each operation, pure JS (@noble), node:crypto
// inline, and the Piscina pool (one call at a time, and a batch of concurrent calls).
// Every row of one operation times the same work; stamp verification is two operations:
// the whole verifyStamp (header parse, key check, ECDSA verify: what a request pays), in
// all four ways, and the ECDSA P-256 verify alone, noble against node:crypto (the pool
// has no bare-verify task). The clock is tinybench's, per task call; a "concurrent" row
// divides a batch's time by its size.
// Run: npm run bench:crypto   (about 20 s; prints a Markdown table)
import { availableParallelism, cpus } from 'node:os';
import { Bench } from 'tinybench';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { utf8 } from '../src/crypto/bytes.js';
import { createExportBundle } from '../src/crypto/export-bundle.js';
import { generateP256KeyPair, keyPairToHex, signP256Rfc6979, verifyP256 } from '../src/crypto/p256.js';
import { CryptoPool } from '../src/crypto/pool.js';
import { noblePrimitives, nobleVerifyP256 } from '../src/crypto/reference-noble.js';
import { issueSessionKey } from '../src/crypto/session-bundle.js';
import { normalizePublicKeyHex, parseStamp, verifyStamp } from '../src/crypto/stamp.js';
import { generateMnemonic } from '../src/crypto/wallet-secrets.js';
import { signWebhookBody } from '../src/crypto/webhook-signature.js';

const BATCH = 32;
const TIME_MS = Number(process.env.BENCH_TIME_MS ?? 400);

const session = keyPairToHex(generateP256KeyPair());
const client = keyPairToHex(generateP256KeyPair());
const signer = generateP256KeyPair();
const webhookKey = generateP256KeyPair();
const mnemonic = generateMnemonic();
const payload = JSON.stringify({
  action: 'EXPORT_WALLET',
  accountId: 'InternalAccount:019a0000-0000-7000-8000-000000000000',
  requestId: '019a0000-0000-7000-8000-000000000001',
  expiresAt: '2025-10-13T00:05:00.000Z',
  bodySha256: 'a'.repeat(64),
});
const payloadBytes = utf8.encode(payload);
const webhookBody = utf8.encode(JSON.stringify({ id: 'Webhook:x', type: 'TEST', timestamp: '2025-10-13T00:00:00Z', filler: 'x'.repeat(800) }));
const stamper = new ApiKeyStamper({ apiPublicKey: session.publicKeyCompressed, apiPrivateKey: session.privateKey });
const header = (await stamper.stamp(payload)).stampHeaderValue;
const parsed = parseStamp(header);
if (!parsed.ok) throw new Error('bench stamp does not parse');
const der = parsed.stamp.signature;
const sessionPubBytes = Buffer.from(session.publicKeyCompressed, 'hex');
const expected = [session.publicKeyCompressed];

const pool = new CryptoPool({ routes: { verifyStamp: 'pool', issueSessionKey: 'pool', createExportBundle: 'pool', signWebhook: 'pool' } });
// Warm the workers (module load) before measuring.
await Promise.all(Array.from({ length: pool.threads * 2 }, () => pool.verifyStamp({ header, payload, expectedPublicKeys: expected })));

const check = (cond: boolean): void => {
  if (!cond) throw new Error('benchmark operation produced a wrong result');
};

const bench = new Bench({ time: TIME_MS, warmupTime: 100, throws: true });
const rows: { op: string; impl: string; perCall: number }[] = [];
const perCallDivisor = new Map<string, number>();
const add = (op: string, impl: string, fn: () => unknown, divisor = 1): void => {
  const name = `${op} | ${impl}`;
  perCallDivisor.set(name, divisor);
  bench.add(name, fn as () => void);
};

/**
 * verifyStamp with noble's ECDSA verify in place of node:crypto's: the same header parse
 * and key check (src/crypto/stamp.ts), so its row times the same work as the others.
 */
function nobleVerifyStamp(stampHeader: string, signed: string, keys: readonly string[]): boolean {
  const stamp = parseStamp(stampHeader);
  if (!stamp.ok || !keys.some((k) => normalizePublicKeyHex(k) === stamp.stamp.publicKey)) return false;
  return nobleVerifyP256(utf8.encode(signed), stamp.stamp.signature, Buffer.from(stamp.stamp.publicKey, 'hex'));
}

// 1. Stamp verification, whole: header parse, key check, ECDSA P-256 verify over the payload.
const WHOLE = 'verify stamp: whole verifyStamp';
add(WHOLE, 'noble ECDSA (pure JS)', () => check(nobleVerifyStamp(header, payload, expected)));
add(WHOLE, 'node:crypto inline', () => check(verifyStamp({ header, payload, expectedPublicKeys: expected }).ok));
add(WHOLE, 'pool, 1 call', async () => check((await pool.verifyStamp({ header, payload, expectedPublicKeys: expected })).ok));
add(WHOLE, `pool, ${BATCH} concurrent (per call)`, async () => {
  const all = await Promise.all(Array.from({ length: BATCH }, () => pool.verifyStamp({ header, payload, expectedPublicKeys: expected })));
  check(all.every((r) => r.ok));
}, BATCH);

// 1b. The ECDSA P-256 verify alone: payload bytes, DER signature, SEC1 key bytes in; no header.
const BARE_VERIFY = 'verify stamp: ECDSA verify alone';
add(BARE_VERIFY, 'noble (pure JS)', () => check(nobleVerifyP256(payloadBytes, der, sessionPubBytes)));
add(BARE_VERIFY, 'node:crypto inline', () => check(verifyP256(payloadBytes, der, sessionPubBytes)));

// 2. Session key issue: key generation + HPKE seal + base58check
add('issue session key (HPKE seal)', 'noble (pure JS)', () => check(issueSessionKey(client.publicKey, { primitives: noblePrimitives }).encryptedSessionSigningKey.length > 0));
add('issue session key (HPKE seal)', 'node:crypto inline', () => check(issueSessionKey(client.publicKey).encryptedSessionSigningKey.length > 0));
add('issue session key (HPKE seal)', 'pool, 1 call', async () => check((await pool.issueSessionKey(client.publicKey)).encryptedSessionSigningKey.length > 0));
add('issue session key (HPKE seal)', `pool, ${BATCH} concurrent (per call)`, async () => {
  await Promise.all(Array.from({ length: BATCH }, () => pool.issueSessionKey(client.publicKey)));
}, BATCH);

// 3. Webhook body signature
add('sign webhook body', 'noble (pure JS)', () => check(signP256Rfc6979(webhookBody, webhookKey.privateKey).length > 0));
add('sign webhook body', 'node:crypto inline', () => check(signWebhookBody(webhookBody, webhookKey.privateKey).length > 0));
add('sign webhook body', 'pool, 1 call', async () => check((await pool.signWebhook(webhookBody, webhookKey.privateKey)).length > 0));
add('sign webhook body', `pool, ${BATCH} concurrent (per call)`, async () => {
  await Promise.all(Array.from({ length: BATCH }, () => pool.signWebhook(webhookBody, webhookKey.privateKey)));
}, BATCH);

// 4. Export bundle (HPKE seal + signature)
const exportParams = { clientPublicKey: client.publicKey, mnemonic, organizationId: 'InternalAccount:bench', signer };
add('export bundle (seal + sign)', 'noble HPKE + node sign', () => check(createExportBundle(exportParams, { primitives: noblePrimitives }).length > 0));
add('export bundle (seal + sign)', 'node:crypto inline', () => check(createExportBundle(exportParams).length > 0));
add('export bundle (seal + sign)', 'pool, 1 call', async () => check((await pool.createExportBundle(exportParams)).length > 0));

await bench.run();
await pool.close();

for (const task of bench.tasks) {
  const result = task.result;
  if (result.state !== 'completed') throw new Error(`${task.name}: ${result.state}`);
  const [op = '', impl = ''] = task.name.split(' | ');
  rows.push({ op, impl, perCall: (result.latency.mean * 1000) / (perCallDivisor.get(task.name) ?? 1) });
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`Node ${process.version}, OpenSSL ${process.versions.openssl}, ${cpu}, ${availableParallelism()} cores, pool threads ${pool.threads}, ${TIME_MS} ms per task\n`);
console.log('| operation | implementation | µs per call | calls/s |');
console.log('|---|---|---:|---:|');
for (const r of rows) console.log(`| ${r.op} | ${r.impl} | ${r.perCall.toFixed(1)} | ${Math.round(1e6 / r.perCall).toLocaleString('en-US')} |`);
