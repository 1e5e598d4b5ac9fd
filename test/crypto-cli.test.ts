import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { createExportBundle } from '../src/crypto/export-bundle.js';
import { generateP256KeyPair, keyPairFromPrivateKey } from '../src/crypto/p256.js';
import { issueSessionKey } from '../src/crypto/session-bundle.js';
import { verifyStamp } from '../src/crypto/stamp.js';
import { generateMnemonic } from '../src/crypto/wallet-secrets.js';
import { hex, toHexString } from './support/crypto-fixtures.js';

// dist/test/crypto-cli.test.js -> dist/scripts/wallet.js
const CLI = fileURLToPath(new URL('../scripts/wallet.js', import.meta.url));

function wallet(args: readonly string[], stdin?: string): { status: number | null; stdout: string; stderr: string } {
  // A command that hangs is killed (status null) rather than hanging the suite.
  const r = spawnSync(process.execPath, [CLI, ...args], { input: stdin ?? '', encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The command's one JSON object on stdout (nothing else there), after checking it succeeded. */
function ok<T = Record<string, string>>(args: readonly string[], stdin?: string): T {
  const r = wallet(args, stdin);
  assert.equal(r.status, 0, `wallet ${args.join(' ')} failed: ${r.stderr}`);
  assert.match(r.stdout, /^\{.*\}\n$/, 'one JSON object, one line');
  return JSON.parse(r.stdout) as T;
}

function genKeypair(): { publicKey: string; publicKeyCompressed: string; privateKey: string } {
  return ok(['gen-keypair']);
}

describe('wallet CLI', { timeout: 120_000 }, () => {
  it('gen-keypair prints a consistent key pair usable as clientPublicKey', () => {
    const pair = genKeypair();
    assert.match(pair.publicKey, /^04[0-9a-f]{128}$/);
    assert.match(pair.privateKey, /^[0-9a-f]{64}$/);
    const derived = keyPairFromPrivateKey(hex(pair.privateKey));
    assert.equal(toHexString(derived.publicKey), pair.publicKey);
    assert.equal(toHexString(derived.publicKeyCompressed), pair.publicKeyCompressed);
    assert.notEqual(genKeypair().privateKey, pair.privateKey);
  });

  it('decrypt-bundle opens an issued session key; stamp signs with it; the service verifies the stamp', () => {
    const client = genKeypair();
    const issued = issueSessionKey(client.publicKey);
    const sessionPriv = ok(['decrypt-bundle', issued.encryptedSessionSigningKey, client.privateKey]).sessionPrivateKey!;
    assert.equal(sessionPriv, decryptCredentialBundle(issued.encryptedSessionSigningKey, client.privateKey));

    const payload = '{"action":"EXPORT_WALLET","requestId":"0199e0c4-4444-7000-8000-000000000000"}';
    const header = ok(['stamp', sessionPriv, payload]).stamp!;
    assert.deepEqual(verifyStamp({ header, payload, expectedPublicKeys: [issued.sessionPublicKey] }), { ok: true, publicKey: issued.sessionPublicKey });
    assert.equal(verifyStamp({ header, payload: payload + ' ', expectedPublicKeys: [issued.sessionPublicKey] }).ok, false);
  });

  it('"-" reads an argument from stdin (one trailing newline removed, the rest kept byte for byte)', () => {
    const client = genKeypair();
    const issued = issueSessionKey(client.publicKey);
    assert.equal(ok(['decrypt-bundle', '-', client.privateKey], issued.encryptedSessionSigningKey + '\n').sessionPrivateKey!.length, 64);
    const sessionPriv = ok(['decrypt-bundle', issued.encryptedSessionSigningKey, '-'], client.privateKey + '\n').sessionPrivateKey!;
    const payload = '{\n  "spaced": true }  ';
    const header = ok(['stamp', sessionPriv, '-'], payload + '\n').stamp!;
    assert.equal(verifyStamp({ header, payload, expectedPublicKeys: [issued.sessionPublicKey] }).ok, true);
  });

  it('decrypt-export prints the mnemonic and how its signature was checked: production with --signer, sandbox without', () => {
    const client = genKeypair();
    const signer = generateP256KeyPair();
    const mnemonic = generateMnemonic();
    const organizationId = 'InternalAccount:0199e0c4-5555-7000-8000-000000000000';
    const signed = createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer });
    assert.deepEqual(ok(['decrypt-export', signed, client.privateKey, organizationId, '--signer', toHexString(signer.publicKey)]), { mnemonic, signature: 'trusted' });
    assert.deepEqual(ok(['decrypt-export', '-', client.privateKey, organizationId, '--signer', toHexString(signer.publicKey)], signed), { mnemonic, signature: 'trusted' });
    assert.deepEqual(ok(['decrypt-export', signed, client.privateKey, organizationId, '--signer', '-'], toHexString(signer.publicKey)), { mnemonic, signature: 'trusted' });

    const other = toHexString(generateP256KeyPair().publicKey);
    const wrongSigner = wallet(['decrypt-export', signed, client.privateKey, organizationId, '--signer', other]);
    assert.equal(wrongSigner.status, 1);
    assert.match(wrongSigner.stderr, /different key than the trusted signer/);

    const noSigner = wallet(['decrypt-export', signed, client.privateKey, organizationId]);
    assert.equal(noSigner.status, 0);
    assert.deepEqual(JSON.parse(noSigner.stdout), { mnemonic, signature: 'embedded' });
    assert.match(noSigner.stderr, /warning: signature checked against the key inside the bundle only/);

    const sandbox = createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer: null });
    const r = wallet(['decrypt-export', sandbox, client.privateKey, organizationId]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, JSON.stringify({ mnemonic, signature: 'unsigned' }) + '\n');
    assert.equal(r.stderr, '');

    const wrongOrg = wallet(['decrypt-export', sandbox, client.privateKey, 'InternalAccount:other']);
    assert.equal(wrongOrg.status, 1);
    assert.match(wrongOrg.stderr, /expected "InternalAccount:other"/);
  });

  it('fails with status 1 when the key does not open the bundle', () => {
    const client = genKeypair();
    const issued = issueSessionKey(client.publicKey);
    const r = wallet(['decrypt-bundle', issued.encryptedSessionSigningKey, genKeypair().privateKey]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^error: bundle does not decrypt with this private key/);
    assert.equal(r.stdout, '');
  });

  it('bad usage exits with status 2 and says what is wrong', () => {
    const cases: [string[], RegExp][] = [
      [[], /no command given[\s\S]*Usage:/],
      [['frobnicate'], /unknown command "frobnicate"[\s\S]*Usage:/],
      [['gen-keypair', 'extra'], /gen-keypair takes 0 arguments/],
      [['decrypt-bundle', 'abc'], /decrypt-bundle takes 2 arguments: <bundle> <privHex>/],
      [['stamp', 'nothex', 'payload'], /sessionPrivHex must be 64 hex characters/],
      [['stamp', '00'.repeat(32), 'payload'], /sessionPrivHex is not a valid P-256 private key/],
      [['stamp', '-', '-'], /only one argument may be "-"/],
      [['decrypt-export', 'b', '11'.repeat(32)], /decrypt-export takes 3 arguments/],
      [['decrypt-export', 'b', '11'.repeat(32), 'org', '--signer'], /Option '--signer <value>' argument missing/],
      [['decrypt-export', 'b', '11'.repeat(32), 'org', '--signer', 'xyz'], /--signer must be a P-256 public key in hex/],
      [['decrypt-export', 'b', '11'.repeat(32), 'org', '--verbose'], /Unknown option '--verbose'/],
      [['stamp', '11'.repeat(32), 'payload', '--signer', '02' + '11'.repeat(32)], /--signer is an option of decrypt-export only/],
    ];
    for (const [args, message] of cases) {
      const r = wallet(args, '11'.repeat(32));
      assert.equal(r.status, 2, `wallet ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
    for (const args of [['--help'], ['-h'], ['stamp', '--help']]) {
      const help = wallet(args);
      assert.equal(help.status, 0);
      assert.match(help.stdout, /^Usage: payments-wallet <command>/);
      assert.match(help.stdout, /decrypt-export <bundle> <privHex> <organizationId> \[--signer <hex>\]/);
      assert.equal(help.stderr, '');
    }
  });
});
