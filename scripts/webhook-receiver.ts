// A webhook receiver for trying the service out (README, Quickstart): it checks each
// delivery's X-Service-Signature against the environment's public key (GET /config,
// `webhookPublicKeyPem`) and prints every event that verifies as one JSON line on stdout,
// so its output can be piped or kept as JSON Lines. It uses node:crypto alone, as an
// integrator's own receiver would, so it doubles as an example of the check.
//
//   node dist/scripts/webhook-receiver.js --public-key-file <pem> [--port 4000] [--host 127.0.0.1]
//
// A verified event is answered 200. That answer also approves a pending incoming payment
// (its webhook's answer decides it: docs/api.md, Webhooks). A delivery whose signature does
// not verify is answered 401 and named on stderr; it is never printed.
// Exit status: 0 after SIGINT or SIGTERM, 1 when it cannot listen, 2 bad usage or a key file
// that cannot be read.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const USAGE = 'Usage: node dist/scripts/webhook-receiver.js --public-key-file <pem> [--port 4000] [--host 127.0.0.1]';
/** The service's own request-body limit; a webhook is far smaller. */
const MAX_BODY_BYTES = 1024 * 1024;
const SIGNATURE_HEADER = 'x-service-signature';

interface Options {
  publicKey: KeyObject;
  port: number;
  host: string;
}

function usageError(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

function readOptions(): Options {
  let values: { 'public-key-file'?: string; port?: string; host?: string };
  try {
    ({ values } = parseArgs({
      options: { 'public-key-file': { type: 'string' }, port: { type: 'string', default: '4000' }, host: { type: 'string', default: '127.0.0.1' } },
      strict: true,
    }));
  } catch (err) {
    usageError(err instanceof Error ? err.message : String(err));
  }
  const file = values['public-key-file'];
  if (file === undefined) usageError('--public-key-file is required: the webhookPublicKeyPem of GET /config, saved to a file');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) usageError(`--port must be 0 to 65535, got ${values.port}`);
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey(readFileSync(file, 'utf8'));
  } catch (err) {
    usageError(`cannot read a public key from ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { publicKey, port, host: values.host ?? '127.0.0.1' };
}

/** The body as sent, byte for byte (the signature covers these bytes); undefined past the limit. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The check every receiver makes: base64 DER ECDSA P-256 SHA-256 over the exact body. */
function signatureVerifies(body: Buffer, signature: string, publicKey: KeyObject): boolean {
  return verify('sha256', body, publicKey, Buffer.from(signature, 'base64'));
}

async function receive(req: IncomingMessage, res: ServerResponse, publicKey: KeyObject): Promise<void> {
  if (req.method !== 'POST') {
    res.writeHead(405, { Allow: 'POST' }).end();
    return;
  }
  const body = await readBody(req);
  if (body === undefined) {
    res.writeHead(413).end();
    return;
  }
  const signature = String(req.headers[SIGNATURE_HEADER] ?? '');
  if (!signatureVerifies(body, signature, publicKey)) {
    process.stderr.write(`refused a delivery to ${req.url ?? '/'}: ${signature === '' ? 'no X-Service-Signature' : 'the signature does not verify'}\n`);
    res.writeHead(401).end();
    return;
  }
  // Signed by the service, so JSON; printed re-serialised to be sure it is one line.
  process.stdout.write(`${JSON.stringify(JSON.parse(body.toString('utf8')))}\n`);
  res.writeHead(200).end();
}

function main(): void {
  const { publicKey, port, host } = readOptions();
  const server = createServer((req, res) => {
    receive(req, res, publicKey).catch((err: unknown) => {
      process.stderr.write(`delivery failed: ${err instanceof Error ? err.message : String(err)}\n`);
      if (!res.headersSent) res.writeHead(400);
      res.end();
    });
  });
  server.on('error', (err) => {
    process.stderr.write(`cannot listen on ${host}:${port}: ${err.message}\n`);
    process.exit(1);
  });
  server.listen(port, host, () => {
    const { port: bound } = server.address() as AddressInfo;
    process.stderr.write(`listening on http://${host}:${bound}/, printing each verified event as one JSON line\n`);
  });
  const stop = (): void => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main();
