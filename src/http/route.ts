// What a route is: method, path, schemas, and a handler that decides through the engine.
// The same definition drives dispatch, validation and the OpenAPI document.
import type { TSchema } from '@sinclair/typebox';
import type { DomainCommand } from '../../actors/world.js';
import type { PlatformEnv } from '../../actors/platform.js';
import type { Services } from '../services.js';
import type { Validator } from './validation.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface Reply {
  status: number;
  body: unknown;
}

export interface RequestHeaders {
  idempotencyKey?: string;
  requestId?: string;
  walletSignature?: string;
}

export interface RouteContext<B, Q> {
  env: PlatformEnv;
  params: Readonly<Record<string, string>>;
  query: Q;
  body: B;
  headers: RequestHeaders;
  services: Services;
  /** Runs a command from actors/ on the engine, its result rendered as the reply (on idempotent routes remembered with it). */
  run<I, R, F>(command: DomainCommand<I, R, F>, input: I, render: (result: R) => Reply): Promise<Reply>;
}

export interface Route<B = unknown, Q = unknown> {
  method: Method;
  /** Relative to the version segment, with `{name}` parameters. */
  path: string;
  /**
   * The operation's name in the OpenAPI document, unique across the API: a camelCase verb
   * phrase (createCustomer, listCustomers), chosen by hand because generated clients name
   * their methods and types after it, so it must not change when a path or summary does.
   */
  operationId: string;
  summary: string;
  tag: string;
  body?: Validator<B>;
  query?: Validator<Q>;
  /** The success body's schema, for the OpenAPI document. */
  response?: TSchema;
  status: number;
  /** Other successes the route answers (a signed retry's 202, a 204), published beside `status` with what each means. */
  alsoAnswers?: ReadonlyArray<{ status: number; response?: TSchema; description: string }>;
  sandboxOnly?: boolean;
  /** Honours Idempotency-Key (CONTRACT.md). */
  idempotent?: boolean;
  /**
   * Takes a wallet stamp: `stamp`, a Service-Wallet-Signature (or Grid-Wallet-Signature) over
   * a payloadToSign the service handed out; `signed retry`, a 202 challenge answered by the
   * same request again with Request-Id and the stamp. Published as header parameters.
   */
  walletStamp?: 'stamp' | 'signed retry';
  handle(ctx: RouteContext<B, Q>): Promise<Reply>;
}

/** Keeps each route's body and query types while collecting routes in one list. */
export function route<B = undefined, Q = undefined>(definition: Route<B, Q>): Route {
  return definition as unknown as Route;
}
