// The one event of a payment step, `payment.recorded`: the quote's new status, the new or
// changed transactions, the postings to internal accounts, the ledger totals' deltas and
// the webhook events, applied together as one log entry. Five kinds apply it, each
// declaring in its own module only the part it reads (quote.ts, transaction.ts,
// internal-account.ts, ledger.ts, webhook-event.ts); this module, above them all, is
// where the whole event is written down, for the decisions that make it.
import type { Posting } from './internal-account.js';
import type { LedgerDelta } from './ledger.js';
import type { Quote, QuoteChange, QuoteEvent } from './quote.js';
import type { LoggedTransaction } from './transaction.js';
import type { WebhookRecordedAs } from './webhook-event.js';

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
}

export type MoneyEvent = QuoteEvent | PaymentRecorded;
