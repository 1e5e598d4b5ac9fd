// A bounded, closed-loop keep-alive HTTP/1.1 load generator, run as its own process
// (forked by bench/support/load.ts). Each connection has one request in flight and
// sends the next as soon as a response is complete. Latency is measured per request
// from write to the end of the response body.
//
// The default client writes pre-serialised requests on plain sockets and reads only the
// status line and Content-Length: on a 2-core machine the generator shares the CPU with
// the server, and node:http's client costs several times more per request. The 'http'
// client (node:http, keep-alive Agent) is kept as a cross-check.
import { connect, type Socket } from 'node:net';
import { Agent, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { LatencyHistogram } from './stats.js';
import type { LoadResult, LoadSpec, ParentMessage, RequestTemplate, WorkerMessage } from './load-protocol.js';

const HEAD_END = Buffer.from('\r\n\r\n');
/** Most completion buckets one window keeps (at 250 ms buckets, almost 7 hours). */
const MAX_BUCKETS = 100_000;

function send(message: WorkerMessage, then?: () => void): void {
  if (process.send === undefined) throw new Error('the load worker must be forked with an IPC channel');
  process.send(message, undefined, {}, () => then?.());
}

function serialise(t: RequestTemplate, host: string, port: number): Buffer {
  const body = t.body ?? '';
  let head = `${t.method} ${t.path} HTTP/1.1\r\nHost: ${host}:${port}\r\n`;
  for (const [k, v] of Object.entries(t.headers)) head += `${k}: ${v}\r\n`;
  if (t.method !== 'GET' || body !== '') head += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  return Buffer.from(`${head}\r\n${body}`, 'utf8');
}

function idFrom(body: string | Buffer): string | undefined {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  const at = text.indexOf('"id":"');
  if (at < 0) return undefined;
  const end = text.indexOf('"', at + 6);
  return end < 0 ? undefined : text.slice(at + 6, end);
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  const histogram = new LatencyHistogram();
  const statuses = new Map<number, number>();
  const errorSamples: string[] = [];
  const ids: string[] = [];
  let errors = 0;
  let non2xx = 0;
  let completed = 0;
  let inFlight = 0;
  let next = spec.offset;
  let sent = 0;
  let stopping = false;
  let finished = false;

  const started = performance.now();
  const windowStart = started + spec.warmupMs;
  const windowEnd = windowStart + spec.durationMs;
  let windowStartedAt = windowStart;
  let windowEndedAt = windowEnd;
  const buckets: number[] =
    spec.bucketMs === undefined ? [] : new Array<number>(Math.min(MAX_BUCKETS, Math.ceil(spec.durationMs / spec.bucketMs))).fill(0);
  let cpuAtStart = process.cpuUsage();
  let cpuMs = 0;

  const nextIndex = (): number => {
    const i = next % spec.requests.length;
    next++;
    sent++;
    return i;
  };
  const limitReached = (): boolean => spec.limit !== undefined && sent >= spec.limit;
  /** Whether a connection that is free should send another request. */
  const wantMore = (): boolean => !stopping && !limitReached();

  const error = (what: string): void => {
    errors++;
    if (errorSamples.length < 5) errorSamples.push(what);
  };

  /** Records one response; returns whether the connection should send another request. */
  const done = (status: number, sentAt: number, body: Buffer | string | undefined): boolean => {
    const now = performance.now();
    inFlight--;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const ok = status >= 200 && status < 300;
    if (!ok) non2xx++;
    if (now >= windowStart && now < windowEnd) {
      completed++;
      histogram.record(now - sentAt);
      if (spec.bucketMs !== undefined) {
        const bucket = Math.floor((now - windowStart) / spec.bucketMs);
        if (bucket < buckets.length) buckets[bucket]!++;
      }
    }
    if (ok && body !== undefined && ids.length < spec.collectIds) {
      const id = idFrom(body);
      if (id !== undefined) ids.push(id);
    }
    return wantMore();
  };

  const collect = spec.collectIds > 0;
  let closeAll: () => void;
  let wake: (() => void) | undefined;
  const allIdle = new Promise<void>((resolve) => {
    wake = resolve;
  });
  /** Raw client: every connection closed (the server went away), so no response can come. */
  let allClosed = false;
  const maybeIdle = (): void => {
    if ((stopping || limitReached() || allClosed) && inFlight === 0) wake?.();
  };

  if (spec.client === 'raw') {
    const wire = spec.requests.map((t) => serialise(t, spec.host, spec.port));
    const sockets = new Set<Socket>();
    const open = (): void => {
      const socket = connect({ host: spec.host, port: spec.port });
      socket.setNoDelay(true);
      sockets.add(socket);
      let pending: Buffer | undefined;
      let status = 0;
      let need = -1;
      let sentAt = 0;
      let busy = false;
      let closing = false;
      const fire = (): void => {
        busy = true;
        inFlight++;
        sentAt = performance.now();
        socket.write(wire[nextIndex()]!);
      };
      socket.on('connect', () => {
        if (wantMore()) fire();
        else maybeIdle();
      });
      socket.on('data', (chunk: Buffer) => {
        let buf = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
        let off = 0;
        for (;;) {
          if (need < 0) {
            const end = buf.indexOf(HEAD_END, off);
            if (end < 0) break;
            status = (buf[off + 9]! - 48) * 100 + (buf[off + 10]! - 48) * 10 + (buf[off + 11]! - 48);
            const head = buf.toString('latin1', off, end).toLowerCase();
            const cl = head.indexOf('\r\ncontent-length:');
            if (cl >= 0) {
              const eol = head.indexOf('\r\n', cl + 2);
              need = Number.parseInt(head.slice(cl + 17, eol < 0 ? undefined : eol).trim(), 10);
            } else if (head.includes('\r\ntransfer-encoding:')) {
              error('chunked responses are not supported by the raw client');
              socket.destroy();
              return;
            } else {
              need = 0;
            }
            closing = head.includes('\r\nconnection: close');
            off = end + 4;
          }
          if (buf.length - off < need) break;
          const body = collect ? buf.subarray(off, off + need) : undefined;
          off += need;
          need = -1;
          busy = false;
          const again = done(status, sentAt, body);
          if (closing) {
            socket.destroy();
            if (again) open();
            maybeIdle();
            return;
          }
          if (again) fire();
          else maybeIdle();
        }
        // Socket chunks are fresh allocations, so keeping a view of the tail is safe.
        pending = off < buf.length ? buf.subarray(off) : undefined;
      });
      socket.on('error', (err) => error(`socket: ${err.message}`));
      socket.on('close', () => {
        sockets.delete(socket);
        if (busy && !finished) {
          busy = false;
          inFlight--;
          error('connection closed with a request in flight');
          if (wantMore()) open();
        }
        allClosed = sockets.size === 0;
        maybeIdle();
      });
    };
    for (let i = 0; i < spec.connections; i++) open();
    closeAll = () => {
      for (const s of sockets) s.destroy();
    };
  } else {
    const agent = new Agent({ keepAlive: true, maxSockets: spec.connections, maxFreeSockets: spec.connections });
    const loop = (): void => {
      const t = spec.requests[nextIndex()]!;
      const headers: Record<string, string | number> = { ...t.headers };
      if (t.body !== undefined) headers['content-length'] = Buffer.byteLength(t.body);
      inFlight++;
      const sentAt = performance.now();
      const req = httpRequest({ host: spec.host, port: spec.port, method: t.method, path: t.path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          if (collect) chunks.push(c);
        });
        res.on('end', () => {
          if (done(res.statusCode ?? 0, sentAt, collect ? Buffer.concat(chunks) : undefined)) loop();
          else maybeIdle();
        });
      });
      req.on('error', (err) => {
        inFlight--;
        error(`request: ${err.message}`);
        if (wantMore()) loop();
        else maybeIdle();
      });
      req.end(t.body);
    };
    for (let i = 0; i < spec.connections && wantMore(); i++) loop();
    closeAll = () => agent.destroy();
  }

  await new Promise<void>((resolve) =>
    setTimeout(() => {
      windowStartedAt = performance.now();
      cpuAtStart = process.cpuUsage();
      send({ type: 'window-start' });
      resolve();
    }, Math.max(0, windowStart - performance.now())),
  );
  // With a limit, the window also ends once every request sent is answered.
  let windowTimer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise<void>((resolve) => {
      windowTimer = setTimeout(resolve, Math.max(0, windowEnd - performance.now()));
    }),
    ...(spec.limit === undefined ? [] : [allIdle]),
  ]);
  clearTimeout(windowTimer);
  windowEndedAt = performance.now();
  const cpu = process.cpuUsage(cpuAtStart);
  cpuMs = (cpu.user + cpu.system) / 1000;
  send({ type: 'window-end' });
  stopping = true;
  maybeIdle();
  await Promise.race([allIdle, new Promise((resolve) => setTimeout(resolve, spec.drainMs))]);
  const unanswered = inFlight;
  finished = true;
  closeAll();
  return {
    completed,
    // Responses are counted by their completion time against the nominal window (cut short by a limit).
    elapsedMs: Math.min(spec.durationMs, windowEndedAt - windowStart),
    windowStartEpochMs: performance.timeOrigin + windowStart,
    buckets,
    cpuWindowMs: windowEndedAt - windowStartedAt,
    histogram: histogram.toData(),
    statuses: Object.fromEntries([...statuses].map(([k, v]) => [String(k), v])),
    non2xx,
    errors,
    errorSamples,
    unanswered,
    cpuMs,
    ids,
  };
}

process.once('message', (message: ParentMessage) => {
  if (message.type !== 'run') return;
  run(message.spec).then(
    (result) => send({ type: 'result', result }, () => process.disconnect()),
    (err: unknown) => send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }, () => process.disconnect()),
  );
});
