// Request framing on the wire (raw sockets to 127.0.0.1): a request whose end is in doubt
// (conflicting Content-Length, Content-Length with Transfer-Encoding, a coding other than
// chunked) or whose Host is wrong is answered 400 and its connection closed, a chunked one
// 411, and bytes after it are never read as a request: a smuggled create creates nothing.
// A write pipelined behind another request is never executed (uWS drops the connection). Where
// uWebSockets.js drops a request before the service sees it (both framing headers, no
// Host, unknown methods), the test pins exactly what it sends back, so a uWS upgrade that
// changes it is noticed (README.md, "HTTP framing").
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { serviceForSuite } from './support/service.js';
import { totalCount } from './support/assertions.js';

const CUSTOMERS = '/2025-10-13/customers';
const CREATE_BODY = '{"customerType":"INDIVIDUAL"}';

interface Exchange {
  /** Everything the server sent. */
  bytes: Buffer;
  /** How the connection ended: FIN, RST, or still open when the wait was over. */
  ended: 'fin' | 'reset' | 'open';
}

interface WireResponse {
  status: number;
  /** Header names lower-case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes each part in turn (the next once `gapMs` has passed) on one connection and
 * collects what comes back until the server closes it, or `waitMs` after the last write.
 */
function exchange(port: number, parts: ReadonlyArray<string | Buffer>, { waitMs = 1500, gapMs = 0 } = {}): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended: Exchange['ended'] = 'open';
    let timer: NodeJS.Timeout | undefined;
    const sock = net.connect(port, '127.0.0.1', () => {
      void (async () => {
        for (const [i, part] of parts.entries()) {
          if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
          if (sock.destroyed) return;
          sock.write(part);
        }
        timer = setTimeout(() => sock.destroy(), waitMs);
      })();
    });
    sock.on('data', (chunk: Buffer) => chunks.push(chunk));
    sock.on('end', () => {
      ended = 'fin';
    });
    sock.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET') ended = 'reset';
      else reject(err);
    });
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ bytes: Buffer.concat(chunks), ended });
    });
  });
}

/** The responses in `bytes`, each framed by its Content-Length; throws on anything else left over. */
function responses(bytes: Buffer): WireResponse[] {
  const out: WireResponse[] = [];
  let rest = bytes;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    assert.ok(end > 0, `an incomplete response head: ${JSON.stringify(rest.toString('latin1'))}`);
    const lines = rest.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    assert.ok(rest.length >= end + 4 + length, 'a response shorter than its Content-Length');
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: rest.subarray(end + 4, end + 4 + length).toString('utf8') });
    rest = rest.subarray(end + 4 + length);
  }
  return out;
}

describe('HTTP framing', () => {
  let port: number;
  let auth: string;
  const svc = serviceForSuite();
  before(async () => {
    port = svc.service.http.port;
    auth = svc.basic('sandbox');
  });

  /** A request head with Host and the sandbox token; `headers` are CRLF-terminated lines. */
  const head = (method: string, headers: string, path = CUSTOMERS): string => `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth}\r\n${headers}\r\n`;
  /** A complete, valid create: what an attacker hides after a bad frame. */
  const smuggledCreate = (): string => head('POST', `Content-Type: application/json\r\nContent-Length: ${CREATE_BODY.length}\r\n`) + CREATE_BODY;
  const customers = (): Promise<number> => totalCount(svc, '/customers');

  /** One 400 INVALID_INPUT (or the given refusal) naming `field`, with Connection: close, then FIN and nothing else. */
  const assertRefused = (ex: Exchange, field: string, what: string, refusal = { status: 400, code: 'INVALID_INPUT' }): void => {
    const got = responses(ex.bytes);
    assert.equal(got.length, 1, `${what}: exactly one response, got ${got.map((r) => r.status).join(', ')}`);
    const [res] = got;
    assert.equal(res!.status, refusal.status, `${what}: ${res!.body.trim()}`);
    assert.equal(res!.headers.connection, 'close', what);
    assert.match(res!.headers['content-type'] ?? '', /^application\/json/);
    const body = JSON.parse(res!.body) as { status: number; code: string; details: Array<{ field: string; message: string }> };
    assert.equal(body.status, refusal.status);
    assert.equal(body.code, refusal.code);
    assert.deepEqual(body.details.map((d) => d.field), [field], what);
    assert.equal(ex.ended, 'fin', `${what}: the service closes the connection after the ${refusal.status}`);
  };
  const lengthRequired = { status: 411, code: 'LENGTH_REQUIRED' };

  /** What this uWS does with a request it will not hand to any handler: no byte back, FIN at once. */
  const assertDroppedByUws = (ex: Exchange, what: string): void => {
    assert.equal(ex.bytes.toString('latin1'), '', `${what}: uWS answers nothing`);
    assert.equal(ex.ended, 'fin', `${what}: uWS closes the connection`);
  };

  describe('Content-Length', () => {
    it('conflicting duplicates are 400 and close, in either order, and the request hidden after them creates nothing', async () => {
      const before = await customers();
      const hidden = smuggledCreate();
      const body = '{}' + hidden;
      // uWS frames by the first value: with the short one first, the rest would be the next request.
      for (const [first, second] of [
        [2, body.length],
        [body.length, 2],
      ]) {
        const ex = await exchange(port, [head('POST', `Content-Type: application/json\r\nContent-Length: ${first}\r\nContent-Length: ${second}\r\n`) + body]);
        assertRefused(ex, 'Content-Length', `Content-Length ${first} then ${second}`);
      }
      // The finding's shape: 29 then 5 with a 29-byte body (was 201), and 5 then 29 (was 400 plus a desync).
      for (const [first, second] of [
        [29, 5],
        [5, 29],
      ]) {
        const ex = await exchange(port, [head('POST', `Content-Type: application/json\r\nContent-Length: ${first}\r\nContent-Length: ${second}\r\n`) + CREATE_BODY]);
        assertRefused(ex, 'Content-Length', `Content-Length ${first} then ${second}`);
      }
      assert.equal(await customers(), before);
    });

    it('the bad frame is refused on a connection that already had an answered request, which still gets its answer', async () => {
      const before = await customers();
      const ok = `GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n`;
      const hidden = smuggledCreate();
      const bad = head('POST', `Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: ${2 + hidden.length}\r\n`) + '{}' + hidden;
      const ex = await exchange(port, [ok + bad]);
      const got = responses(ex.bytes);
      assert.deepEqual(got.map((r) => r.status), [200, 400]);
      assert.equal(got[1]!.headers.connection, 'close');
      assert.equal(ex.ended, 'fin');
      assert.equal(await customers(), before);
    });

    it('bytes written after the 400 are not read either', async () => {
      const before = await customers();
      const bad = head('POST', `Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 29\r\n`) + '{}';
      const ex = await exchange(port, [bad, smuggledCreate()], { gapMs: 200 });
      assert.equal(responses(ex.bytes).length, 1);
      assert.equal(responses(ex.bytes)[0]!.status, 400);
      assert.equal(await customers(), before);
    });

    it('identical duplicates are accepted (every reader frames them alike) and the connection stays open', async () => {
      const before = await customers();
      const create = head('POST', `Content-Type: application/json\r\nContent-Length: ${CREATE_BODY.length}\r\nContent-Length: ${CREATE_BODY.length}\r\n`) + CREATE_BODY;
      const ex = await exchange(port, [create, smuggledCreate()], { gapMs: 300 });
      assert.deepEqual(responses(ex.bytes).map((r) => r.status), [201, 201]);
      assert.equal(ex.ended, 'open');
      assert.equal(await customers(), before + 2);
    });

    it('a value that is not a number is 400 and close (uWS would close without a status)', async () => {
      for (const value of ['5abc', '-1', '+5', '5, 5']) {
        const ex = await exchange(port, [head('POST', `Content-Type: application/json\r\nContent-Length: ${value}\r\n`) + 'hello']);
        assertRefused(ex, 'Content-Length', `Content-Length: ${value}`);
      }
    });
  });

  describe('Transfer-Encoding', () => {
    it('chunked is 411 LENGTH_REQUIRED and close, well-formed or not: no body is executed and nothing after it is read', async () => {
      const before = await customers();
      const size = CREATE_BODY.length.toString(16);
      // Each body, as uWS's lax decoder would read it, is the valid create, executed before
      // this refusal (bare LF, no CRLF after the data, no final CRLF), misframed (a space
      // before the size) or left unanswered (an extension, which RFC 9112 §7.1.1 allows).
      const bodies: Record<string, string> = {
        'well-formed': `${size}\r\n${CREATE_BODY}\r\n0\r\n\r\n`,
        'bare-LF chunk lines': `${size}\n${CREATE_BODY}\n0\n\n`,
        'chunk data without its CRLF': `${size}\r\n${CREATE_BODY}0\r\n\r\n`,
        'no final CRLF': `${size}\r\n${CREATE_BODY}\r\n0\r\n`,
        'a space before the size': ` ${size}\r\n${CREATE_BODY}\r\n0\r\n\r\n`,
        'a chunk extension': `${size};a=b\r\n${CREATE_BODY}\r\n0\r\n\r\n`,
      };
      const chunked = head('POST', 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n');
      for (const [what, body] of Object.entries(bodies)) {
        assertRefused(await exchange(port, [chunked + body]), 'Transfer-Encoding', what, lengthRequired);
        // The same with bytes after it: with no final CRLF uWS used to execute the create and close without a status.
        assertRefused(await exchange(port, [chunked + body + smuggledCreate()]), 'Transfer-Encoding', `${what}, then a create`, lengthRequired);
      }
      assert.equal(await customers(), before);
    });

    it('chunked is refused from the head alone, before a byte of the body is sent, and what is sent after is not read', async () => {
      const before = await customers();
      const chunked = head('POST', 'Content-Type: application/json\r\nTransfer-Encoding: Chunked\r\n');
      const ex = await exchange(port, [chunked, `${CREATE_BODY.length.toString(16)}\r\n${CREATE_BODY}\r\n0\r\n\r\n${smuggledCreate()}`], { gapMs: 200 });
      assertRefused(ex, 'Transfer-Encoding', 'head first, body later', lengthRequired);
      assert.equal(await customers(), before);
    });

    it('with Content-Length, both non-empty, uWS closes at once without a status (pinned) and the hidden create is not read', async () => {
      const before = await customers();
      const chunk = `${CREATE_BODY.length.toString(16)}\r\n${CREATE_BODY}\r\n0\r\n\r\n`;
      for (const framing of [`Content-Length: ${chunk.length}\r\nTransfer-Encoding: chunked\r\n`, `Transfer-Encoding: chunked\r\nContent-Length: ${chunk.length}\r\n`]) {
        const ex = await exchange(port, [head('POST', `Content-Type: application/json\r\n${framing}`) + chunk + smuggledCreate()]);
        assertDroppedByUws(ex, JSON.stringify(framing));
      }
      assert.equal(await customers(), before);
    });

    it('with Content-Length where one of them is empty (uWS would frame by the other) is 400 and close', async () => {
      const before = await customers();
      const chunk = `${CREATE_BODY.length.toString(16)}\r\n${CREATE_BODY}\r\n0\r\n\r\n`;
      const cases: Array<[string, string, string]> = [
        ['Content-Length:\r\nTransfer-Encoding: chunked\r\n', chunk, 'Transfer-Encoding'],
        [`Transfer-Encoding:\r\nContent-Length: ${CREATE_BODY.length}\r\n`, CREATE_BODY, 'Transfer-Encoding'],
      ];
      for (const [framing, body, field] of cases) {
        const ex = await exchange(port, [head('POST', `Content-Type: application/json\r\n${framing}`) + body + smuggledCreate()]);
        assertRefused(ex, field, JSON.stringify(framing));
      }
      assert.equal(await customers(), before);
    });

    it('repeated, or with a coding other than chunked, is 400 and close', async () => {
      const before = await customers();
      const chunk = `${CREATE_BODY.length.toString(16)}\r\n${CREATE_BODY}\r\n0\r\n\r\n`;
      for (const framing of ['Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', 'Transfer-Encoding:\r\nTransfer-Encoding: chunked\r\n', 'Transfer-Encoding: gzip, chunked\r\n', 'Transfer-Encoding: chunked, gzip\r\n', 'Transfer-Encoding: identity\r\n']) {
        const ex = await exchange(port, [head('POST', `Content-Type: application/json\r\n${framing}`) + chunk + smuggledCreate()]);
        assertRefused(ex, 'Transfer-Encoding', JSON.stringify(framing));
      }
      assert.equal(await customers(), before);
    });
  });

  describe('pipelining', () => {
    const livez = `GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n`;

    it('a write with a request pipelined behind it is dropped unexecuted with the connection (uWS closes it), so a retry creates exactly one', async () => {
      const before = await customers();
      // The finding: POST /customers and GET /livez in one write closed with no byte back, yet the customer existed.
      for (const behind of [livez, smuggledCreate()]) {
        const ex = await exchange(port, [smuggledCreate() + behind]);
        assert.equal(ex.bytes.toString('latin1'), '', 'uWS answers nothing: it closes a connection whose next request comes before the answer');
        assert.equal(ex.ended, 'fin');
        assert.equal(await customers(), before, 'nothing was executed, so retrying is safe');
      }
      // The client's retry, one request at a time (RFC 9112 §9.3.2), creates one customer.
      const retried = await exchange(port, [smuggledCreate(), livez], { gapMs: 300 });
      assert.deepEqual(responses(retried.bytes).map((r) => r.status), [201, 200]);
      assert.equal(await customers(), before + 1);
    });

    it('reads pipelined are answered in order, and so is a write pipelined last', async () => {
      const before = await customers();
      const ex = await exchange(port, [head('GET', '') + livez + `GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n` + smuggledCreate()]);
      const got = responses(ex.bytes);
      assert.deepEqual(got.map((r) => r.status), [200, 200, 200, 201]);
      assert.deepEqual(JSON.parse(got[1]!.body), { status: 'ok' });
      assert.equal(ex.ended, 'open');
      assert.equal(await customers(), before + 1);
    });
  });

  describe('Host', () => {
    it('missing on HTTP/1.1: uWS closes at once without a status (pinned) and reads nothing after', async () => {
      const before = await customers();
      const noHost = `POST ${CUSTOMERS} HTTP/1.1\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${CREATE_BODY.length}\r\n\r\n${CREATE_BODY}`;
      assertDroppedByUws(await exchange(port, [noHost + smuggledCreate()]), 'no Host');
      assert.equal(await customers(), before);
    });

    it('a request line with no header lines at all: uWS holds the bytes unanswered (pinned), reads no request from them, and closes past 4 KiB', async () => {
      const before = await customers();
      const bare = `GET /healthz HTTP/1.1\r\n\r\n`;
      const held = await exchange(port, [bare + smuggledCreate()], { waitMs: 1000 });
      assert.equal(held.bytes.toString('latin1'), '', 'no status');
      assert.equal(held.ended, 'open', 'uWS waits for more of the head (until its 10 s idle timeout)');
      const overflow = await exchange(port, [bare + smuggledCreate(), 'x'.repeat(4096)], { gapMs: 100 });
      assertDroppedByUws(overflow, 'no header lines, then 4 KiB');
      assert.equal(await customers(), before);
    });

    it('empty or repeated is 400 and close', async () => {
      const before = await customers();
      for (const hosts of ['Host:\r\n', 'Host: localhost\r\nHost: evil.example\r\n']) {
        const request = `POST ${CUSTOMERS} HTTP/1.1\r\n${hosts}Authorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${CREATE_BODY.length}\r\n\r\n${CREATE_BODY}`;
        const ex = await exchange(port, [request + smuggledCreate()]);
        assertRefused(ex, 'Host', JSON.stringify(hosts));
      }
      assert.equal(await customers(), before);
    });
  });

  describe('methods', () => {
    it('unknown, lower-case or mixed-case methods: uWS closes at once without a status (pinned) and reads nothing after', async () => {
      const before = await customers();
      for (const method of ['FOO', 'PROPFIND', 'get', 'post', 'Post']) {
        const ex = await exchange(port, [head(method, '') + smuggledCreate()]);
        assertDroppedByUws(ex, method);
      }
      assert.equal(await customers(), before);
    });

    it('methods uWS passes but no route takes are 405 with Allow, and the connection carries on', async () => {
      for (const method of ['OPTIONS', 'TRACE', 'PUT']) {
        const ex = await exchange(port, [head(method, '') + `GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n`]);
        const got = responses(ex.bytes);
        assert.deepEqual(got.map((r) => r.status), [405, 200], method);
        assert.deepEqual((got[0]!.headers.allow ?? '').split(', ').sort(), ['GET', 'POST'], method);
        assert.equal(JSON.parse(got[0]!.body).code, 'METHOD_NOT_ALLOWED');
      }
    });
  });
});
