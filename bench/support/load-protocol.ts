// What the HTTP bench sends to a load-generator process, and what it gets back.
import type { HistogramData } from './stats.js';

export interface RequestTemplate {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface LoadSpec {
  host: string;
  port: number;
  /** Keep-alive connections this process holds; each has one request in flight. */
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** After the window: how long to wait for the last responses before giving up. */
  drainMs: number;
  /** Sent round-robin over all connections, starting at `offset`. */
  requests: RequestTemplate[];
  offset: number;
  /** Collect up to this many `"id":"..."` values from 2xx response bodies. */
  collectIds: number;
  /** 'raw': pre-serialised requests on net sockets; 'http': node:http with a keep-alive Agent. */
  client: 'raw' | 'http';
  /**
   * Send at most this many requests (warmup included), then end the window as soon as the
   * last is answered; durationMs stays the cap. Unset: the window is durationMs.
   */
  limit?: number;
  /** Count the window's completions in buckets of this many ms (unset: no buckets). */
  bucketMs?: number;
}

export interface LoadResult {
  /** Responses completed inside the measured window. */
  completed: number;
  /** The window (ms): durationMs, or less when `limit` ended it early. */
  elapsedMs: number;
  /** When the window started, in ms since the epoch (performance.timeOrigin based, comparable across processes). */
  windowStartEpochMs: number;
  /** Completions per `bucketMs` of the window, from its start; empty without bucketMs. */
  buckets: number[];
  histogram: HistogramData;
  /** Status counts over the whole run (warmup, window, drain). */
  statuses: Record<string, number>;
  non2xx: number;
  errors: number;
  errorSamples: string[];
  /** Requests still without a response when the drain ended. */
  unanswered: number;
  /** Wall time between the window's start and end timers (ms), for the CPU share. */
  cpuWindowMs: number;
  /** CPU this process used during the window (ms). */
  cpuMs: number;
  ids: string[];
}

export type WorkerMessage =
  | { type: 'window-start' }
  | { type: 'window-end' }
  | { type: 'result'; result: LoadResult }
  | { type: 'error'; message: string };

export type ParentMessage = { type: 'run'; spec: LoadSpec };
