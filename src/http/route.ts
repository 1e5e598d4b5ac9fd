// What a route is: method, path, schemas, and a handler that parses the request, runs a
// command or reads a query of actors/, and renders the reply. The same definition drives
// dispatch, validation and the OpenAPI document. A handler reaches nothing else of the
// service but the few ports of RoutePorts, each for what the domain cannot answer.
import type { TSchema } from '@sinclair/typebox';
import type { IdKind } from '../engine/ids.js';
import type { DomainCommand, DomainQuery } from '../../actors/world.js';
import type { Environment, Permission, PlatformEnv } from '../../actors/platform.js';
import type { IssuedToken } from './platform-auth.js';
import type { WalletPorts } from '../../actors/commands/wallet.js';
import type { TargetPolicy } from '../outbound/target-policy.js';
import type { WebhookDelivery } from '../webhooks/delivery.js';
import type { Validator } from './validation.js';
import type { LookupSettings } from '../config.js';
import type { BlobStore } from '../engine/blob-store.js';
import type { CsvTable } from './bulk-csv.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface Reply {
  status: number;
  body: unknown;
  /**
   * The record `body` renders, when it is one record's render (record-reply.ts): an
   * idempotency record names it instead of carrying the rendered body.
   */
  reports?: { kind: IdKind; id: string };
  /**
   * What an Idempotency-Key's replay answers instead of `body`, when `body` holds what must
   * never be stored: a new API token's secret, shown once.
   */
  replayBody?: unknown;
}

export interface RequestHeaders {
  idempotencyKey?: string;
  requestId?: string;
  walletSignature?: string;
}

/** A route's path parameters as matched, before its `params` schema (if any) has read them. */
export type PathParams = Readonly<Record<string, string>>;

/**
 * What a route reaches besides commands and queries: each is outside the world, or slower
 * than a decision may wait for (decisions hold their actors while they decide).
 */
export interface RoutePorts {
  /** The service signer's public key (hex), which the configuration publishes: a key the service keeps, not a record. */
  signerPublicKey: string;
  /** Where a URL a client gives may lead: a DNS lookup, checked before the command (PATCH /config) or the send (POST /webhooks/test). */
  outboundTargets: Pick<TargetPolicy, 'check'>;
  /**
   * The delivery worker: the endpoint's state as its tries left it (in memory, not logged),
   * a signed test send (outside the outbox), a look at the queue once a new endpoint is set,
   * and a wait for a recorded event's first logged try (POST /sandbox/webhooks/test).
   */
  webhooks: Pick<WebhookDelivery, 'endpointState' | 'sendTest' | 'kick' | 'triedWithin'>;
  /** The operator's VASP directory and End User Terms (src/config.ts): settings of the deployment, read by no decision. */
  lookups: LookupSettings;
  /** Cryptography, mail and verifiers for the wallet's commands, the stamp of a quote's execute among them (src/wallet/ports.ts). */
  wallet: WalletPorts;
  /** Where documents' bytes are kept, beside the log: written durably before the entry that names them. */
  documentBytes: BlobStore;
  /** Bulk imports: where a file's bytes are kept (durable before the job naming them), and the importer told of a new job. */
  bulkImports: { readonly bytes: BlobStore; kick(jobId: string, parsed?: CsvTable): void };
  /** A new API token's client id and secret, drawn through the entropy seam (the secret never reaches a decision, only its hash). */
  issueToken(environment: Environment): IssuedToken;
  /** Told of an environment whose tokens changed, once the entry is durable and before the answer (TokensChanged). */
  tokensChanged: TokensChanged;
}

/**
 * Brings what authenticates requests outside this store's own token index up to date with an
 * environment's tokens (a host that checks credentials against a copy kept elsewhere), so a
 * revoked token is refused there too. Where requests authenticate against this store's index
 * there is nothing to do.
 */
export type TokensChanged = (env: PlatformEnv) => Promise<void>;

export interface RouteContext<B, Q, P = PathParams> {
  env: PlatformEnv;
  /** The client id of the API token the request was authenticated with. */
  tokenId: string;
  params: P;
  query: Q;
  body: B;
  headers: RequestHeaders;
  ports: RoutePorts;
  /** Runs a command from actors/ on the engine, its result rendered as the reply (on idempotent routes remembered with it). */
  run<I, R, F>(command: DomainCommand<I, R, F>, input: I, render: (result: R) => Reply): Promise<Reply>;
  /** Answers a query of actors/ once what came before it is durable. */
  read<I, R>(query: DomainQuery<I, R>, input: I): Promise<R>;
}

export interface Route<B = unknown, Q = unknown, P = PathParams> {
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
  /**
   * What the request's API token must hold (CONTRACT.md): VIEW for every GET; TRANSACT for
   * moving money (quotes, execution, transfers, sandbox money, approvals, cancellations);
   * MANAGE for configuration, tokens, customers and accounts, webhooks and documents.
   * Checked as the request is authenticated, before its body is read.
   */
  permission: Permission;
  body?: Validator<B>;
  /**
   * A multipart/form-data body instead of JSON, of at most `maxBytes` (the front's 1 MiB
   * limit is for JSON): the handler gets the bytes (a MultipartBody) and parses them itself,
   * before its command. `schema` publishes the form's fields.
   */
  multipart?: { schema: TSchema; maxBytes: number };
  query?: Validator<Q>;
  /** Reads the path's `{name}` parameters; published as the path parameters' schemas. */
  params?: Validator<P>;
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
  handle(ctx: RouteContext<B, Q, P>): Promise<Reply>;
}

/** Keeps each route's body, query and path parameter types while collecting routes in one list. */
export function route<B = undefined, Q = undefined, P = PathParams>(definition: Route<B, Q, P>): Route {
  return definition as unknown as Route;
}
