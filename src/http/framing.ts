// Request framing and the headers the front reads, taken in one pass over the header
// section (`req.forEach`). uWebSockets.js frames a body by the *first* Content-Length or
// Transfer-Encoding it finds, while a proxy in front may take the last one or merge them:
// where the two could disagree about where a request ends, the rest of the bytes could be
// read as a request the proxy never saw (request smuggling). Such a request is refused
// with 400 and its connection closed before uWS reads another byte of it (RFC 9112 §6.3,
// §3.2); so is a chunked body, with 411 (uWS's chunked decoder is lax: framingProblem).
// What uWS refuses before any handler runs (both Content-Length and Transfer-Encoding, no
// Host, unknown methods) is in README.md, "HTTP framing".
import type uWS from 'uWebSockets.js';
import { DomainError, invalidInput, type FieldProblem } from '../../actors/errors.js';
import { errorBody, statusOf, type ErrorBody } from './errors.js';

/**
 * The headers of one request, read by one `forEach` (one call into uWS instead of one
 * `getHeader` per name: fewer crossings for the usual handful of headers), plus what
 * framing needs: how often each framing header came and whether the values agreed.
 * One instance serves every request: the handler reads it synchronously, before anything
 * awaits, so no request can see another's values.
 */
export class HeaderScan {
  authorization = '';
  contentType = '';
  contentLength = '';
  transferEncoding = '';
  host = '';
  /** undefined when absent; '' when sent empty (or made only of bytes uWS trims). */
  idempotencyKey: string | undefined;
  /** A signed retry's Request-Id (the wallet challenge it answers). */
  requestId = '';
  /** The client's X-Request-Id, the request's name in logs (server.ts keeps it when it is tame). */
  xRequestId = '';
  walletSignature = '';
  /** `Grid-Wallet-Signature`, the name today's clients send the same stamp under (CONTRACT.md, "Real clients"). */
  gridWalletSignature = '';
  contentLengths = 0;
  contentLengthsDiffer = false;
  transferEncodings = 0;
  hosts = 0;

  /** Field names arrive lower-cased (uWS lower-cases them as it parses). The first of a repeated header wins, as with getHeader. */
  readonly #visit = (key: string, value: string): void => {
    switch (key) {
      case 'host':
        if (this.hosts++ === 0) this.host = value;
        break;
      case 'authorization':
        if (this.authorization === '') this.authorization = value;
        break;
      case 'content-type':
        if (this.contentType === '') this.contentType = value;
        break;
      case 'content-length':
        if (this.contentLengths++ === 0) this.contentLength = value;
        else if (value !== this.contentLength) this.contentLengthsDiffer = true;
        break;
      case 'transfer-encoding':
        if (this.transferEncodings++ === 0) this.transferEncoding = value;
        break;
      case 'idempotency-key':
        this.idempotencyKey ??= value;
        break;
      case 'request-id':
        if (this.requestId === '') this.requestId = value;
        break;
      case 'x-request-id':
        if (this.xRequestId === '') this.xRequestId = value;
        break;
      case 'service-wallet-signature':
        if (this.walletSignature === '') this.walletSignature = value;
        break;
      case 'grid-wallet-signature':
        if (this.gridWalletSignature === '') this.gridWalletSignature = value;
        break;
    }
  };

  read(req: uWS.HttpRequest): this {
    this.authorization = '';
    this.contentType = '';
    this.contentLength = '';
    this.transferEncoding = '';
    this.host = '';
    this.idempotencyKey = undefined;
    this.requestId = '';
    this.xRequestId = '';
    this.walletSignature = '';
    this.gridWalletSignature = '';
    this.contentLengths = 0;
    this.contentLengthsDiffer = false;
    this.transferEncodings = 0;
    this.hosts = 0;
    req.forEach(this.#visit);
    return this;
  }
}

/**
 * Why the request's framing (or Host) is refused, or undefined when it is sound: 400
 * INVALID_INPUT naming the header, or 411 LENGTH_REQUIRED for a chunked body. Identical
 * repeated Content-Length values are accepted: every reader frames them alike (RFC 9110
 * §8.6 lets a recipient collapse them).
 */
export function framingProblem(h: HeaderScan): DomainError | undefined {
  const problem = ambiguousFraming(h);
  if (problem !== undefined) return invalidInput([problem], `malformed request framing: ${problem.field} ${problem.message}`);
  // uWS's chunked decoder accepts what RFC 9112 §7.1 does not (bare-LF chunk lines, chunk
  // data without its CRLF, a missing final CRLF) and misreads what it does allow (a chunk
  // extension, `1d;a=b`, is read as part of the size): such a body would be executed, or
  // the bytes after it read as the next request. The API's clients send Content-Length, so
  // chunked is refused before its first chunk is read.
  if (h.transferEncodings === 1 && h.transferEncoding.trim().toLowerCase() === 'chunked') {
    const message = 'chunked request bodies are not accepted: send the body with Content-Length';
    return new DomainError('LENGTH_REQUIRED', message, [{ field: 'Transfer-Encoding', message }]);
  }
  return undefined;
}

/** What could be framed two ways, or not at all (RFC 9112 §6.3, §3.2); chunked alone is left to framingProblem. */
function ambiguousFraming(h: HeaderScan): FieldProblem | undefined {
  if (h.contentLengthsDiffer) return { field: 'Content-Length', message: 'sent more than once with different values' };
  if (h.transferEncodings > 0 && h.contentLengths > 0) return { field: 'Transfer-Encoding', message: 'must not be sent with Content-Length' };
  if (h.transferEncodings > 1) return { field: 'Transfer-Encoding', message: 'sent more than once' };
  // A coding other than chunked leaves the body's end unknown (§6.3); the contract has no 501.
  if (h.transferEncodings === 1 && h.transferEncoding.trim().toLowerCase() !== 'chunked') return { field: 'Transfer-Encoding', message: 'only Content-Length framing is accepted' };
  if (h.contentLengths > 0 && !/^[0-9]+$/.test(h.contentLength)) return { field: 'Content-Length', message: 'must be a decimal number of bytes' };
  // uWS holds a request without Host unanswered (README); should it ever pass one, it is refused here.
  if (h.hosts !== 1 || h.host === '') return { field: 'Host', message: h.hosts > 1 ? 'sent more than once' : 'required, and must not be empty' };
  return undefined;
}

/** The stamp under either of its names; both sent and different is refused (`walletSignatureConflict`). */
export function walletSignatureOf(h: HeaderScan): string {
  return h.walletSignature !== '' ? h.walletSignature : h.gridWalletSignature;
}

/** Both names of the stamp header sent, with different values: which one counts is not for the service to guess. */
export function walletSignatureConflict(h: HeaderScan): FieldProblem | undefined {
  if (h.walletSignature === '' || h.gridWalletSignature === '' || h.walletSignature === h.gridWalletSignature) return undefined;
  return { field: 'Grid-Wallet-Signature', message: 'differs from Service-Wallet-Signature: send the stamp under one name' };
}

/**
 * uWS writes a response into its per-loop cork buffer (16 KiB in this version) while the
 * handler runs, and sends it only after it has parsed every request in the bytes it read.
 * `end(body, true)` closes the connection only when nothing is corked, and `close()` drops
 * what is corked: a small 400 would either be followed by the next request in the buffer
 * (the smuggled one) or never leave. A body larger than the cork buffer is written straight
 * to the socket, so the 400 leaves at once and `end(…, true)` can close right away.
 */
const CORK_BUFFER_BYTES = 16 * 1024;

/**
 * Answers the refusal (400 or 411) and closes the connection, inside the uWS handler, so
 * that uWS reads no further request from it, nor a byte of the refused body. The JSON error
 * is padded with trailing whitespace past the cork buffer (see CORK_BUFFER_BYTES); bad
 * frames are rare, the padding costs nothing else. Should a later uWS cork more than that,
 * yielding the route still closes the connection (uWS force-closes a request no handler
 * takes) and nothing after the bad frame is read: only the status would be lost, which
 * test/http-framing.test.ts would notice.
 */
export function refuseFrame(res: uWS.HttpResponse, req: uWS.HttpRequest, error: DomainError, requestId: string): void {
  const json = JSON.stringify(errorBody(error, requestId) satisfies ErrorBody);
  // Still inside the handler's synchronous part, where uWS has corked the socket itself.
  res.writeStatus(statusOf(error) === 411 ? '411 Length Required' : '400 Bad Request');
  res.writeHeader('X-Request-Id', requestId);
  res.writeHeader('Content-Type', 'application/json');
  res.end(json.padEnd(CORK_BUFFER_BYTES + 1, ' '), true);
  req.setYield(true);
}
