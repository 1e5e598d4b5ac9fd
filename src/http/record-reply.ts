// A reply that renders one record says which (`Reply.reports`), so that its idempotency
// record names the record instead of carrying the rendered bytes, and a replay renders that
// record again. Both go through the one render of the record's kind below, and the record a
// replay renders is the one the first reply's entry left (records are immutable), so the
// replay's bytes are the first reply's.
import { renderOwner } from '../../actors/beneficial-owner.js';
import { renderCustomer } from '../../actors/customer.js';
import { renderDocument } from '../../actors/document.js';
import { renderExternalAccount } from '../../actors/external-account.js';
import { renderInternalAccount } from '../../actors/internal-account.js';
import { renderQuote } from '../../actors/quote.js';
import { renderTransaction } from '../../actors/transaction.js';
import { renderVerification } from '../../actors/verification.js';
import type { Reply } from './route.js';

/** The render of each kind of record an idempotent route answers with. */
const RENDERS = {
  BeneficialOwner: renderOwner,
  Document: renderDocument,
  Customer: renderCustomer,
  ExternalAccount: renderExternalAccount,
  InternalAccount: renderInternalAccount,
  Quote: renderQuote,
  Transaction: renderTransaction,
  Verification: renderVerification,
} as const;

export type ReportedKind = keyof typeof RENDERS;
type RecordOf<K extends ReportedKind> = Parameters<(typeof RENDERS)[K]>[0];

/** `record` rendered as the reply with `status`, naming the record it reports. */
export function recordReply<K extends ReportedKind>(status: number, kind: K, record: RecordOf<K>): Reply {
  const render = RENDERS[kind] as (record: RecordOf<K>) => unknown;
  return { status, body: render(record), reports: { kind, id: record.id } };
}

/** The bytes a reply reporting `record` (of `kind`) had: what an idempotent replay answers. */
export function renderedAgain(kind: string, record: unknown): string {
  if (!(kind in RENDERS)) throw new Error(`an idempotency record reports a ${kind}, which no reply renders`);
  const render = RENDERS[kind as ReportedKind] as (record: unknown) => unknown;
  return JSON.stringify(render(record));
}
