// An operation of the simulation's workload: a request as data, and what its answer
// teaches the model. The workload (workload.ts, wallets.ts) makes them; the simulator sends
// them through the service's request path and hands each answer back.
export type Auth = 'sandbox' | 'production' | 'wrong';

export interface SimRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Without the version segment. */
  path: string;
  query?: string;
  /** JSON, or raw text sent as it is (malformed on purpose). */
  body?: unknown;
  raw?: string;
  auth: Auth;
  headers?: Record<string, string>;
}

export interface Operation {
  /** For the digest and failure reports: what was asked, without ids. */
  label: string;
  request: SimRequest;
  /** Reads the answer into the model; returns a violation when the answer is impossible. */
  answered(status: number, body: Json): string | undefined;
  /** Sent again (same key, same body) when a crash left it unanswered. */
  retry: boolean;
  /** The answer must be a 4xx (invalid input, unknown ids, wrong credentials). */
  refused?: boolean;
  /** A crash left it unanswered and it is not sent again: what it did, if anything, is unknown. */
  unanswered?: () => void;
}

/** A JSON answer, read field by field; a field missing or of another type throws (and fails the run). */
export class Json {
  constructor(readonly value: unknown) {}

  at(key: string): Json {
    const value = this.value !== null && typeof this.value === 'object' ? (this.value as Record<string, unknown>)[key] : undefined;
    return new Json(value);
  }

  str(key: string): string {
    const value = this.at(key).value;
    if (typeof value !== 'string') throw new Error(`the answer's ${key} is not a string`);
    return value;
  }

  num(key: string): number {
    const value = this.at(key).value;
    if (typeof value !== 'number') throw new Error(`the answer's ${key} is not a number`);
    return value;
  }

  /** A string field that may be absent. */
  text(key: string): string | undefined {
    const value = this.at(key).value;
    return typeof value === 'string' ? value : undefined;
  }

  list(key: string): Json[] {
    const value = this.at(key).value;
    if (!Array.isArray(value)) throw new Error(`the answer's ${key} is not a list`);
    return value.map((item) => new Json(item));
  }
}
