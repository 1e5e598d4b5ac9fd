#!/usr/bin/env node
// `payments-wallet`: the client side of the embedded-wallet cryptography, for manual testing
// and for integrators checking their own code against ours.
//
//   payments-wallet gen-keypair
//   payments-wallet decrypt-bundle <bundle> <privHex>
//   payments-wallet stamp <sessionPrivHex> <payload>
//   payments-wallet decrypt-export <bundle> <privHex> <organizationId> [--signer <hex>]
//
// Any one argument may be `-`: it is then read from stdin (one trailing newline removed).
// Each command prints one JSON object on stdout and nothing else; warnings go to stderr.
// Exit codes: 0 success, 1 the operation failed (wrong key, corrupted bundle), 2 bad usage.
import { readFileSync } from 'node:fs';
import { parseCommandLine, UsageError } from './cli.js';
import { fromHex, isHex, toHex } from '../src/crypto/bytes.js';
import { BundleError, InvalidPublicKeyError } from '../src/crypto/errors.js';
import { openExportBundle } from '../src/crypto/export-bundle.js';
import { generateP256KeyPair, isValidPrivateKey, keyPairToHex } from '../src/crypto/p256.js';
import { openSessionBundle } from '../src/crypto/session-bundle.js';
import { createStamp } from '../src/crypto/stamp.js';

const USAGE = `Usage: payments-wallet <command> [arguments]

Commands (each prints one JSON object on stdout):
  gen-keypair
      New P-256 client key pair: {publicKey (uncompressed hex, the clientPublicKey),
      publicKeyCompressed, privateKey (hex)}.
  decrypt-bundle <bundle> <privHex>
      Opens an encryptedSessionSigningKey with the client private key:
      {sessionPrivateKey (hex)}.
  stamp <sessionPrivHex> <payload>
      Signs payloadToSign with the session private key: {stamp}, the value of the
      Service-Wallet-Signature (or Grid-Wallet-Signature) header.
  decrypt-export <bundle> <privHex> <organizationId> [--signer <hex>]
      Opens encryptedWalletCredentials: {mnemonic, signature}, signature being "trusted"
      (checked against --signer), "embedded" (checked only against the key the bundle
      carries) or "unsigned" (a sandbox bundle). With --signer the bundle must be signed
      by that key (production); without it an unsigned (sandbox) bundle is accepted and a
      signed one is checked only against the key it carries.

Options:
  -h, --help    this text

Any one argument may be "-" to read it from stdin (one trailing newline is removed);
put "--" before arguments that start with a dash.
Exit status: 0 success, 1 operation failed, 2 usage error.`;

function readStdinOnce(): () => string {
  let used = false;
  return () => {
    if (used) throw new UsageError('only one argument may be "-" (stdin)');
    used = true;
    return readFileSync(0, 'utf8').replace(/\r?\n$/, '');
  };
}

function privateKeyArg(value: string, name: string): Uint8Array {
  const hex = value.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new UsageError(`${name} must be 64 hex characters (a 32-byte P-256 private key)`);
  const key = fromHex(hex);
  if (!isValidPrivateKey(key)) throw new UsageError(`${name} is not a valid P-256 private key (zero or not below the group order)`);
  return key;
}

/** The command's positional arguments and its --signer, parsed; `-h`/`--help` anywhere asks for the usage. */
function parse(argv: string[]): { command: string | undefined; args: string[]; signer: string | undefined; help: boolean } {
  const { values, positionals } = parseCommandLine({
    args: argv,
    allowPositionals: true,
    options: { signer: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, ...args] = positionals;
  return { command, args, signer: values.signer, help: values.help === true };
}

function signerArg(value: string): string {
  const signer = value.trim();
  if (!isHex(signer) || (signer.length !== 130 && signer.length !== 66)) {
    throw new UsageError('--signer must be a P-256 public key in hex (130 characters uncompressed or 66 compressed)');
  }
  return signer;
}

function run(command: string | undefined, rest: readonly string[], signerOption: string | undefined): object {
  const stdin = readStdinOnce();
  const resolve = (value: string): string => (value === '-' ? stdin() : value);
  const expectArgs = (n: number, shape: string): string[] => {
    if (rest.length !== n) throw new UsageError(`${command} takes ${n} argument${n === 1 ? '' : 's'}: ${shape}`);
    return rest.map(resolve);
  };
  if (signerOption !== undefined && command !== 'decrypt-export') throw new UsageError(`--signer is an option of decrypt-export only`);
  switch (command) {
    case 'gen-keypair': {
      expectArgs(0, '(none)');
      const pair = keyPairToHex(generateP256KeyPair());
      return { publicKey: pair.publicKey, publicKeyCompressed: pair.publicKeyCompressed, privateKey: pair.privateKey };
    }
    case 'decrypt-bundle': {
      const [bundle = '', priv = ''] = expectArgs(2, '<bundle> <privHex>');
      return { sessionPrivateKey: toHex(openSessionBundle(bundle.trim(), privateKeyArg(priv, 'privHex'))) };
    }
    case 'stamp': {
      const [priv = '', payload = ''] = expectArgs(2, '<sessionPrivHex> <payload>');
      return { stamp: createStamp(payload, privateKeyArg(priv, 'sessionPrivHex')) };
    }
    case 'decrypt-export': {
      // The signer first: "-" may be its value, and only one argument may be.
      const signer = signerOption === undefined ? undefined : signerArg(resolve(signerOption));
      const [bundle = '', priv = '', organizationId = ''] = expectArgs(3, '<bundle> <privHex> <organizationId> [--signer <hex>]');
      const opened = openExportBundle({
        bundle: bundle.trim(),
        privateKey: privateKeyArg(priv, 'privHex'),
        organizationId,
        ...(signer === undefined ? {} : { signerPublicKey: signer }),
      });
      if (opened.signature === 'embedded') {
        process.stderr.write('warning: signature checked against the key inside the bundle only; pass --signer <hex> to check who signed it\n');
      }
      return { mnemonic: opened.mnemonic, signature: opened.signature };
    }
    case undefined:
      throw new UsageError('no command given', true);
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`, true);
  }
}

function main(): number {
  try {
    const { command, args, signer, help } = parse(process.argv.slice(2));
    if (help || command === 'help') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    process.stdout.write(JSON.stringify(run(command, args, signer)) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        err.showUsage ? `error: ${err.message}\n\n${USAGE}\n` : `error: ${err.message}\nRun "payments-wallet --help" for usage.\n`,
      );
      return 2;
    }
    if (err instanceof BundleError || err instanceof InvalidPublicKeyError) {
      process.stderr.write(`error: ${err.reason}\n`);
      return 1;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

process.exitCode = main();
