// What the engine (and the services around it) say about themselves: a message for people
// and, beside it, the same facts as fields for machines. The service turns each report into
// one JSON log line (src/ops/log.ts); tests and benches take the message alone.

export type ReportLevel = 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** `event` names what happened (`recovery.progress`, `effect.dead`...); the rest are its facts. */
export interface ReportFields {
  event: string;
  /** Default `info`. */
  level?: ReportLevel;
  [fact: string]: string | number | boolean | undefined;
}

export type Report = (message: string, fields: ReportFields) => void;

/**
 * What the engine measures as it works, for the service's metrics (src/ops/metrics.ts). Called
 * once per commit group, snapshot or replayed batch, never per request, so an observer that
 * does real work costs nothing on the hot path.
 */
export interface EngineObserver {
  /** A commit group is durable: its entries, its stored bytes, and seconds from its first append to durable. */
  groupDurable(entries: number, bytes: number, seconds: number): void;
  /** A snapshot was written (seconds from start to its log trimmed). */
  snapshotWritten(seconds: number): void;
  /** Recovery replayed `entries` more log entries. */
  replayed(entries: number): void;
}
