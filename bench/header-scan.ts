// Micro bench: what reading a request's headers costs inside a uWebSockets.js handler,
// before (one getHeader per header the front reads) and after the framing checks (one
// forEach into HeaderScan, then framingProblem). An HttpRequest lives only during its
// handler, so each variant runs REPEAT times inside the handler of every request, the two
// interleaved, and the figure is ns per request.
//
//   npm run build && node dist/bench/header-scan.js
import uWS from 'uWebSockets.js';
import net from 'node:net';
import { HeaderScan, framingProblem } from '../src/http/framing.js';

const REPEAT = 2000;
const REQUESTS = 400;
const AUTH = `Basic ${'A'.repeat(96)}`;

/** Header sets: the load bench's POST and GET, and what node's fetch sends with a keyed create. */
const SHAPES: Record<string, string> = {
  'bench POST (4 headers)': `POST /c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
  'bench GET (2 headers)': `GET /c/x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAuthorization: ${AUTH}\r\n\r\n`,
  'fetch POST (11 headers)':
    `POST /c HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nconnection: keep-alive\r\nauthorization: ${AUTH}\r\ncontent-type: application/json\r\naccept: */*\r\n` +
    `accept-language: *\r\nsec-fetch-mode: cors\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\nidempotency-key: abc-123\r\ncontent-length: 2\r\n\r\n{}`,
};

let sink = 0;
const scan = new HeaderScan();
const variants: Record<string, (req: uWS.HttpRequest) => void> = {
  'before: 7 getHeader': (req) => {
    sink +=
      req.getHeader('authorization').length +
      req.getHeader('content-type').length +
      req.getHeader('content-length').length +
      req.getHeader('transfer-encoding').length +
      req.getHeader('idempotency-key').length +
      req.getHeader('request-id').length +
      req.getHeader('service-wallet-signature').length;
  },
  'after: HeaderScan + framingProblem': (req) => {
    if (framingProblem(scan.read(req)) !== undefined) sink++;
    sink += scan.authorization.length;
  },
};
const totals = new Map<string, bigint>();

const app = uWS.App();
app.any('/*', (res, req) => {
  for (const [name, run] of Object.entries(variants)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < REPEAT; i++) run(req);
    totals.set(name, (totals.get(name) ?? 0n) + (process.hrtime.bigint() - start));
  }
  res.end('ok');
});

/** Sends `payload` REQUESTS times, one at a time on one keep-alive connection. */
function drive(port: number, payload: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let answered = 0;
    const sock = net.connect(port, '127.0.0.1', () => sock.write(payload));
    sock.on('data', (chunk: Buffer) => {
      answered += chunk.toString('latin1').split('HTTP/1.1 200').length - 1;
      if (answered >= REQUESTS) {
        sock.destroy();
        resolve();
      } else {
        sock.write(payload);
      }
    });
    sock.on('error', reject);
  });
}

app.listen('127.0.0.1', 0, (listen) => {
  if (listen === false) throw new Error('cannot listen');
  void (async () => {
    const port = uWS.us_socket_local_port(listen);
    // One unmeasured pass over every shape first, so that both variants are optimised.
    for (const payload of Object.values(SHAPES)) await drive(port, payload);
    for (const [shape, payload] of Object.entries(SHAPES)) {
      totals.clear();
      await drive(port, payload);
      const cells = [...totals].map(([name, ns]) => `${name} ${(Number(ns) / (REQUESTS * REPEAT)).toFixed(0)} ns`);
      console.log(`${shape}: ${cells.join(', ')}`);
    }
    uWS.us_listen_socket_close(listen);
    if (sink < 0) console.log(sink);
  })();
});
