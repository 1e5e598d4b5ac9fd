// The one event of a payment step, `payment.recorded`: the quote's new status, the new or
// changed transactions, the postings to internal accounts, the ledger totals' deltas and
// the webhook events, applied together as one log entry. Five kinds apply it, each
// declaring in its own module only the part it reads (quote.ts, transaction.ts,
// internal-account.ts, ledger.ts, webhook-event.ts); this module, above them all, is
// where the whole event is written down, for the decisions that make it.
//
// A quote's execution logs `payment.decided` instead: the facts decided at that moment
// (the quote, the transaction id the execution's other ids derive from, the payout's
// plan). What it changes is derived when it is applied (actors/payment.ts,
// executionRecorded), from those facts and the state it applies to, so first apply and
// replay make the same records; `payment.recorded` of an execution stays for the stores
// written before. A new quote likewise logs `quote.decided` (actors/quote.ts), not its
// record; `quote.created` stays for the stores written before. A transfer logs
// `transfer.decided` (actors/transfer.ts, transferRecorded) and a pending outcome that
// plays out `outcome.decided` (actors/payment.ts, outcomeRecorded); their
// `payment.recorded`, as logged before, still applies for the stores written then.
// Sandbox funding logs `funding.decided` and a REALTIME_FUNDING quote's money
// `quoteFunding.decided` (actors/payment.ts), an incoming UMA payment `incoming.decided` and
// its approval, rejection or failure `approval.decided` (actors/incoming.ts); the
// `payment.recorded` they logged before still applies.
import type { LoggedId } from '../src/engine/ids.js';
import type { EventLayout } from '../src/engine/state-machine.js';
import type { Posting } from './internal-account.js';
import type { LedgerDelta } from './ledger.js';
import type { Quote, QuoteChange, QuoteDecided, QuoteEvent } from './quote.js';
import type { FailureReason, LoggedTransaction, PayoutOutcome, PayoutPlan } from './transaction.js';
import type { DerivedStep, WebhookRecordedAs } from './webhook-event.js';

/** One step of a payment: the new records, and the money and webhook events that go with them. */
export interface PaymentRecorded {
  type: 'payment.recorded';
  /** The quote's new status (and its transaction), changed at the entry's time. */
  quoteChange?: QuoteChange;
  /** As logged before quote changes were: the whole changed quote. */
  quote?: Quote;
  transactions: LoggedTransaction[];
  postings: Posting[];
  ledger: LedgerDelta[];
  webhooks: WebhookRecordedAs[];
  /**
   * Never logged: a quote's execution into an internal account names its webhook events as
   * one step where it is derived (actors/payment.ts, payInternally), `webhooks` then empty.
   */
  step?: DerivedStep;
}

/**
 * A quote executed: the facts its `payment.recorded` is derived from. The quote's price,
 * parties and times are the quote's (its record, or its `quote.created` earlier in the
 * same entry); the time is the entry's.
 */
export interface PaymentDecided {
  type: 'payment.decided';
  quoteId: LoggedId;
  /**
   * The outgoing transaction's id; the receiver's transaction and the webhook events take
   * theirs from it (paymentIdsFrom). Absent: the quote's own UUID, as a quote executed as it
   * is made has it (derived-ids.ts, executionTransactionIdOf).
   */
  transactionId?: LoggedId;
  /** How a payout or a direct pull plays out, as decided (the sandbox table); absent: paid into an internal account at once. */
  plan?: PayoutPlan;
}

/** An execution into an internal account, as most are logged (the quote's UUID its payment's), laid out in a row of the log. */
export const PAYMENT_DECIDED_LAYOUT: EventLayout = {
  type: 'payment.decided',
  fields: [['quoteId', 'id']] satisfies ReadonlyArray<readonly [keyof PaymentDecided, EventLayout['fields'][number][1]]>,
};

/** How a transfer's sandbox bank holds it before its outcome timer plays `outcome` (CONTRACT.md's 004 and 005 rows). */
export interface TransferWait {
  readonly status: 'PROCESSING' | 'PENDING';
  readonly afterMs: number;
  readonly outcome: PayoutOutcome;
}

/**
 * A transfer between a bank account and an internal account: the facts its
 * `payment.recorded` is derived from (actors/transfer.ts, transferRecorded). The owner and
 * currency are the internal account's, the time the entry's.
 */
export interface TransferDecided {
  type: 'transfer.decided';
  /** IN: from the bank account into the internal account (an INCOMING transaction); OUT: the other way. */
  direction: 'IN' | 'OUT';
  /** The transaction's id; its webhook events take theirs from it (paymentIdsFrom). */
  transactionId: LoggedId;
  internalAccount: LoggedId;
  externalAccount: LoggedId;
  amount: number;
  paymentRail?: string;
  /** A transfer-out's remittanceInformation. */
  description?: string;
  /** The sandbox bank holds it; absent: it completed at once. */
  wait?: TransferWait;
}

/**
 * A payout's or transfer's pending outcome plays out (its timer fired): the steps it makes
 * are derived from the transaction's `pending` and its quote (actors/payment.ts,
 * outcomeRecorded); the time is the entry's.
 */
export interface OutcomeDecided {
  type: 'outcome.decided';
  transactionId: LoggedId;
  /** The first webhook event's id; the others' are derived from it (idsStartingAt). */
  webhookId: LoggedId;
}

/**
 * A bank payout still in flight cancelled by the platform (POST /transactions/{id}/cancel):
 * it fails with `CANCELLED` and its money comes back with its fees, derived from the
 * transaction and its quote as the state holds them (actors/payment.ts, cancelRecorded);
 * the time is the entry's, which also cancels the outcome timer.
 */
export interface CancelDecided {
  type: 'cancel.decided';
  transactionId: LoggedId;
  /** The first webhook event's id; the others' are derived from it (idsStartingAt). */
  webhookId: LoggedId;
}

/**
 * Sandbox money into an internal account (POST /sandbox/internal-accounts/{id}/fund): the
 * facts its `payment.recorded` is derived from (actors/payment.ts, fundingRecorded). The
 * currency and owner are the account's, the time the entry's.
 */
export interface FundingDecided {
  type: 'funding.decided';
  /** The INCOMING transaction's id; its webhook events take theirs from it (paymentIdsFrom). */
  transactionId: LoggedId;
  internalAccount: LoggedId;
  amount: number;
}

/**
 * The money of a REALTIME_FUNDING quote arrived (POST /sandbox/send): the facts its
 * `payment.recorded` is derived from (actors/payment.ts, quoteFundingRecorded); the
 * amounts and the credited account are the quote's, the time the entry's.
 */
export interface QuoteFundingDecided {
  type: 'quoteFunding.decided';
  quoteId: LoggedId;
  /** The INCOMING transaction's id; its webhook events take theirs from it (paymentIdsFrom). */
  transactionId: LoggedId;
}

/**
 * An incoming UMA payment recorded PENDING (POST /sandbox/uma/receive): the facts its
 * `payment.recorded` is derived from (actors/incoming.ts, incomingRecorded). The customer
 * and currency are the internal account's, the time the entry's.
 */
export interface IncomingDecided {
  type: 'incoming.decided';
  /** The INCOMING transaction's id; its approval webhook takes its id from it (paymentIdsFrom). */
  transactionId: LoggedId;
  /** The account that receives it and owns the transaction. */
  internalAccount: LoggedId;
  senderUmaAddress: string;
  amount: number;
  /** The customer's default UMA deposit account it is paid out to once approved; absent: kept in the internal account. */
  depositAccount?: LoggedId;
}

/**
 * A pending incoming payment approved, rejected or failed (by the platform, its webhook's
 * answer or the approval timer): its steps are derived from the transaction as the state
 * holds it (actors/incoming.ts, approvalRecorded); the time is the entry's.
 */
export interface ApprovalDecided {
  type: 'approval.decided';
  transactionId: LoggedId;
  outcome: 'APPROVE' | 'REJECT' | 'FAIL';
  /** FAIL: why. */
  failureReason?: FailureReason;
  /** The first webhook event's id; the others' are derived from it (idsStartingAt). */
  webhookId: LoggedId;
}

export type MoneyEvent =
  | QuoteEvent
  | QuoteDecided
  | PaymentRecorded
  | PaymentDecided
  | TransferDecided
  | OutcomeDecided
  | CancelDecided
  | FundingDecided
  | QuoteFundingDecided
  | IncomingDecided
  | ApprovalDecided;
