// Embedded-wallet client tool: plays the client side of the wallet cryptography, for
// manual testing and for integrators checking their own code against ours.
//
//   npm run wallet -- gen-keypair
//   npm run wallet -- decrypt-bundle <bundle> <privHex>
//   npm run wallet -- stamp <sessionPrivHex> <payload>
//   npm run wallet -- decrypt-export <bundle> <privHex> <organizationId> [--signer <hex>]
//
// Any one argument may be `-`: it is then read from stdin (one trailing newline removed).
// Exit codes: 0 success, 1 the operation failed (wrong key, corrupted bundle), 2 bad usage.
import { readFileSync } from 'node:fs';
import { fromHex, isHex, toHex } from '../src/crypto/bytes.js';
import { BundleError, InvalidPublicKeyError } from '../src/crypto/errors.js';
import { openExportBundle } from '../src/crypto/export-bundle.js';
import { generateP256KeyPair, isValidPrivateKey, keyPairToHex } from '../src/crypto/p256.js';
import { openSessionBundle } from '../src/crypto/session-bundle.js';
import { createStamp } from '../src/crypto/stamp.js';

const USAGE = `Usage: npm run wallet -- <command> [arguments]

Commands:
  gen-keypair
      New P-256 client key pair. Prints JSON {publicKey (uncompressed hex, the
      clientPublicKey), publicKeyCompressed, privateKey (hex)}.
  decrypt-bundle <bundle> <privHex>
      Opens an encryptedSessionSigningKey with the client private key; prints the
      session private key (hex).
  stamp <sessionPrivHex> <payload>
      Signs payloadToSign with the session private key; prints the
      Service-Wallet-Signature header value.
  decrypt-export <bundle> <privHex> <organizationId> [--signer <hex>]
      Opens encryptedWalletCredentials; prints the mnemonic. With --signer the bundle
      must be signed by that key (production); without it an unsigned (sandbox) bundle
      is accepted and a signed one is checked only against the key it carries.

Any one argument may be "-" to read it from stdin (one trailing newline is removed).
Exit status: 0 success, 1 operation failed, 2 usage error.`;

class UsageError extends Error {
  constructor(message: string, readonly showUsage = false) {
    super(message);
  }
}

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

function run(argv: readonly string[]): string {
  const stdin = readStdinOnce();
  const resolve = (value: string): string => (value === '-' ? stdin() : value);
  const [command, ...rest] = argv;
  const expectArgs = (n: number, shape: string): string[] => {
    if (rest.length !== n) throw new UsageError(`${command} takes ${n} argument${n === 1 ? '' : 's'}: ${shape}`);
    return rest.map(resolve);
  };
  switch (command) {
    case 'gen-keypair': {
      expectArgs(0, '(none)');
      const pair = keyPairToHex(generateP256KeyPair());
      return JSON.stringify({ publicKey: pair.publicKey, publicKeyCompressed: pair.publicKeyCompressed, privateKey: pair.privateKey });
    }
    case 'decrypt-bundle': {
      const [bundle = '', priv = ''] = expectArgs(2, '<bundle> <privHex>');
      return toHex(openSessionBundle(bundle.trim(), privateKeyArg(priv, 'privHex')));
    }
    case 'stamp': {
      const [priv = '', payload = ''] = expectArgs(2, '<sessionPrivHex> <payload>');
      return createStamp(payload, privateKeyArg(priv, 'sessionPrivHex'));
    }
    case 'decrypt-export': {
      const positional: string[] = [];
      let signer: string | undefined;
      for (let i = 0; i < rest.length; i++) {
        const arg = rest[i] ?? '';
        if (arg === '--signer') {
          const value = rest[i + 1];
          if (value === undefined) throw new UsageError('--signer needs a value: the signer public key in hex');
          signer = resolve(value).trim();
          if (!isHex(signer) || (signer.length !== 130 && signer.length !== 66)) {
            throw new UsageError('--signer must be a P-256 public key in hex (130 characters uncompressed or 66 compressed)');
          }
          i++;
        } else if (arg.startsWith('--')) {
          throw new UsageError(`unknown option ${arg}`);
        } else {
          positional.push(arg);
        }
      }
      if (positional.length !== 3) throw new UsageError('decrypt-export takes 3 arguments: <bundle> <privHex> <organizationId> [--signer <hex>]');
      const [bundle = '', priv = '', organizationId = ''] = positional.map(resolve);
      const opened = openExportBundle({
        bundle: bundle.trim(),
        privateKey: privateKeyArg(priv, 'privHex'),
        organizationId,
        ...(signer === undefined ? {} : { signerPublicKey: signer }),
      });
      if (opened.signature === 'embedded') {
        process.stderr.write('warning: signature checked against the key inside the bundle only; pass --signer <hex> to check who signed it\n');
      }
      return opened.mnemonic;
    }
    case undefined:
      throw new UsageError('no command given', true);
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`, true);
  }
}

function main(): number {
  const argv = process.argv.slice(2);
  if (argv.length === 1 && (argv[0] === '-h' || argv[0] === '--help' || argv[0] === 'help')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  try {
    process.stdout.write(run(argv) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        err.showUsage ? `error: ${err.message}\n\n${USAGE}\n` : `error: ${err.message}\nRun "npm run wallet -- --help" for usage.\n`,
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
