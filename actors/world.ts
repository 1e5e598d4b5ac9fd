// The domain state machine: the record kinds registered together (see registry.ts). Each
// kind's module owns its records, indexes, snapshot restore and invariants; World only
// names them. `apply` is the only writer and is deterministic in (state, event, entry
// time). Records are replaced, never mutated, so a snapshot can hold references while
// later entries apply. Indexes are not snapshotted; `restore` rebuilds them.
import { Customers, type CustomerEvent } from './customer.js';
import { approvalRecorded, approvalTimerTransaction, decideSettleIncoming, incomingRecorded, type ApprovalTimer } from './incoming.js';
import { ExternalAccounts, type ExternalAccountEvent } from './external-account.js';
import { InternalAccounts, type InternalAccountEvent } from './internal-account.js';
import { Ledger, type Intake } from './ledger.js';
import { Lookups, type LookupEvent } from './lookup.js';
import { cancelRecorded, decidePayoutOutcome, executionRecorded, fundingRecorded, outcomeRecorded, quoteFundingRecorded } from './payment.js';
import { PlatformEnvs, type PlatformEvent } from './platform.js';
import { decideExpireQuote, QUOTE_DECIDED_LAYOUT, quoteOf, Quotes } from './quote.js';
import { transferRecorded } from './transfer.js';
import { Registry } from './registry.js';
import type { Command, Query } from '../src/engine/state-machine.js';
import { PAYMENT_DECIDED_LAYOUT, type MoneyEvent } from './payment-recorded.js';
import { Transactions, type PaymentTimer, type ReceiptConfirmed } from './transaction.js';
import { decideTimer, Wallets, walletIdOf, type WalletEvent, type WalletTimerMessage } from './wallet.js';
import { Verifications, type VerificationEvent } from './verification.js';
import { BeneficialOwners, type BeneficialOwnerEvent } from './beneficial-owner.js';
import { Documents, type DocumentEvent } from './document.js';
import { BulkImports, type BulkImportEvent } from './bulk-import.js';
import { WebhookEndpoints, WebhookEvents, type WebhookDeliveryEvent } from './webhook-event.js';

export type DomainEvent =
  | PlatformEvent
  | CustomerEvent
  | InternalAccountEvent
  | ExternalAccountEvent
  | LookupEvent
  | MoneyEvent
  | ReceiptConfirmed
  | WalletEvent
  | WebhookDeliveryEvent
  | VerificationEvent
  | BeneficialOwnerEvent
  | DocumentEvent
  | BulkImportEvent;

/** An operation of this domain (actors/commands/): the Command of the engine contract over World. */
export type DomainCommand<I, R, F = undefined> = Command<World, I, R, DomainEvent, F>;

/** A read of this domain (actors/queries/): the Query of the engine contract over World. */
export type DomainQuery<I, R> = Query<World, I, R>;

/** Messages that durable timers deliver. */
export type TimerMessage = PaymentTimer | ApprovalTimer | WalletTimerMessage;

export class World extends Registry<DomainEvent, TimerMessage> implements Intake {
  readonly envs = new PlatformEnvs();
  readonly customers = new Customers(this.envs);
  readonly ledger = new Ledger();
  readonly internalAccounts = new InternalAccounts(this.ledger, this.customers);
  readonly externalAccounts = new ExternalAccounts();
  readonly wallets = new Wallets();
  readonly lookups = new Lookups();
  readonly quotes = new Quotes();
  readonly transactions = new Transactions(this.quotes, this.customers);
  readonly bulkImports = new BulkImports();
  readonly webhookEvents = new WebhookEvents(this.internalAccounts, this.transactions, this.envs, this.customers, this.externalAccounts, this.bulkImports, this.quotes);
  readonly webhookEndpoints = new WebhookEndpoints(this.webhookEvents);
  readonly verifications = new Verifications();
  readonly beneficialOwners = new BeneficialOwners();
  readonly documents = new Documents();

  constructor() {
    super();
    this.register(this.envs);
    this.register(this.customers);
    this.register(this.internalAccounts);
    this.register(this.externalAccounts);
    this.register(this.wallets);
    this.register(this.lookups);
    this.register(this.ledger);
    this.register(this.quotes);
    this.register(this.transactions);
    // Before the webhook events: a job's end is read by the outbox, which applies the same event after it.
    this.register(this.bulkImports);
    // Before the events: a try's outcome wakes the delivery worker, which reads the endpoint's health.
    this.register(this.webhookEndpoints);
    this.register(this.webhookEvents);
    this.register(this.verifications);
    this.register(this.beneficialOwners);
    this.register(this.documents);
    // The world applies the decided facts itself (apply, below), so it names their layouts.
    this.logLayouts.push(QUOTE_DECIDED_LAYOUT, PAYMENT_DECIDED_LAYOUT);
  }

  /**
   * `quote.decided`, `payment.decided`, `transfer.decided`, `outcome.decided`,
   * `cancel.decided`, `funding.decided`, `quoteFunding.decided`, `incoming.decided` and `approval.decided`
   * name a new quote, a quote's execution, a transfer, a pending outcome played out, a
   * payout cancelled in flight, a sandbox funding, a REALTIME_FUNDING quote's money, an incoming UMA payment and its
   * approval by their facts; the kinds apply the `quote.created` and `payment.recorded`
   * derived from them and the state here (actors/quote.ts, actors/payment.ts,
   * actors/transfer.ts, actors/incoming.ts).
   */
  override apply(event: DomainEvent, at: number): void {
    switch (event.type) {
      case 'quote.decided':
        return super.apply({ type: 'quote.created', quote: quoteOf(event, this, at) }, at);
      case 'payment.decided':
        return super.apply(executionRecorded(event, this, at), at);
      case 'transfer.decided':
        return super.apply(transferRecorded(event, this, at), at);
      case 'quoteFunding.decided':
        return super.apply(quoteFundingRecorded(event, this, at), at);
      case 'incoming.decided':
        return super.apply(incomingRecorded(event, this, at), at);
      case 'approval.decided':
        for (const step of approvalRecorded(event, this, at)) super.apply(step, at);
        return;
      case 'funding.decided':
        return super.apply(fundingRecorded(event, this, at), at);
      case 'outcome.decided':
        for (const step of outcomeRecorded(event, this, at)) super.apply(step, at);
        return;
      case 'cancel.decided':
        for (const step of cancelRecorded(event, this, at)) super.apply(step, at);
        return;
      default:
        return super.apply(event, at);
    }
  }

  /** What the environment has taken in of `currency` (Intake in actors/ledger.ts). */
  intakeOf(envId: string, currency: string): number {
    return this.ledger.get(envId, currency).inflow + this.internalAccounts.inflowIn(envId, currency) + this.transactions.awaitingApprovalIn(envId, currency);
  }

  /**
   * Payment timers hold the actor that owns the quote or transaction (its source account,
   * the pulling customer, for a REALTIME_FUNDING quote its customer or environment, or an
   * incoming payment's receiving account); a transfer's outcome timer holds its internal
   * account. A payout's or transfer's outcome timer is keyed by its transaction (`timerId`).
   * Wallet timers hold the wallet's account.
   */
  onTimer(message: TimerMessage, at: number, timerId: string): DomainEvent[] {
    switch (message.type) {
      case 'quote.expire':
        return decideExpireQuote(this.quotes.get(timerId), at);
      case 'payout.outcome': {
        const tx = this.transactions.get(timerId);
        return decidePayoutOutcome(tx, tx === undefined || tx.quoteId === '' ? undefined : this.quotes.get(tx.quoteId), at);
      }
      case 'incoming.approval-timeout': {
        // Approved or rejected in time: the timer was cancelled then; a stale one finds it settled.
        const tx = this.transactions.get(approvalTimerTransaction(timerId));
        const account = tx === undefined ? undefined : this.internalAccounts.get(tx.accountId);
        if (tx === undefined || account === undefined || tx.status !== 'PENDING') return [];
        return decideSettleIncoming(tx, account, { kind: 'FAIL', reason: 'PAYMENT_APPROVAL_TIMED_OUT' }, at);
      }
      case 'wallet.session.expire':
      case 'wallet.request.expire':
        return decideTimer(this.wallets.get(walletIdOf(message.accountId)), message, at);
    }
  }
}
