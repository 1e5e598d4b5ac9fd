// The environment-wide ledger totals of CONTRACT.md "Money": per environment and currency,
// the money in transit (debited from a source, not yet settled, refunded or lost) and the
// fees taken, and the money that entered or left the service without passing through an
// internal account (a direct pull's fees, and its principal as it is converted). With
// them the ledger invariant reads, per environment and currency:
//   sum(balances) + in transit + fees = inflow - outflow
// (accounts' flows plus these; checked by InternalAccounts.checkInvariants).
//
// Who owns them: nobody decides with them. Every movement is decided from the accounts and
// the transaction it concerns (a refund returns that transaction's own amounts), and the
// totals only change as a consequence, in the applier of the same event. So they are
// derived sums, changed by any entry in log order (apply is serial), and no actor needs
// to be held for them. They are records (snapshotted like any other) rather than an index
// rebuilt on restore, because the transactions that add up to them do not all stay in
// flight: a settled payout's in-transit amount is gone, its fee stays.
import { RecordMap, type Appliers, type RecordKind } from './registry.js';
import type { PaymentRecorded } from './transaction.js';

export interface LedgerTotals {
  /** `Ledger:<envId>/<currency>` */
  readonly id: string;
  readonly envId: string;
  readonly currency: string;
  readonly inTransit: number;
  readonly fees: number;
  readonly inflow: number;
  readonly outflow: number;
}

/** How one movement changes the totals of one environment and currency. */
export interface LedgerDelta {
  envId: string;
  currency: string;
  inTransit: number;
  fees: number;
  inflow: number;
  outflow: number;
}

export function ledgerId(envId: string, currency: string): string {
  return `Ledger:${envId}/${currency}`;
}

export class Ledger implements RecordKind<LedgerTotals, PaymentRecorded> {
  readonly idPrefix = 'Ledger:';
  readonly #totals = new RecordMap<LedgerTotals>();
  readonly records: ReadonlyMap<string, LedgerTotals> = this.#totals;

  readonly appliers: Appliers<PaymentRecorded> = {
    'payment.recorded': (event) => {
      for (const delta of event.ledger) {
        const id = ledgerId(delta.envId, delta.currency);
        const now = this.#totals.get(id) ?? zero(id, delta.envId, delta.currency);
        const next: LedgerTotals = {
          ...now,
          inTransit: now.inTransit + delta.inTransit,
          fees: now.fees + delta.fees,
          inflow: now.inflow + delta.inflow,
          outflow: now.outflow + delta.outflow,
        };
        if (!isAmount(next.inTransit) || !isAmount(next.fees) || !isAmount(next.inflow) || !isAmount(next.outflow)) {
          throw new Error(`ledger ${id} would hold in transit ${next.inTransit}, fees ${next.fees}, flows ${next.inflow}/${next.outflow}`);
        }
        this.#totals.set(id, next);
      }
    },
  };

  restore(totals: LedgerTotals): void {
    this.#totals.set(totals.id, totals);
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    for (const t of this.#totals.values()) {
      if (!isAmount(t.inTransit)) problems.push(`${t.id} has ${t.inTransit} in transit`);
      if (!isAmount(t.fees)) problems.push(`${t.id} has fees ${t.fees}`);
      if (!isAmount(t.inflow) || !isAmount(t.outflow)) problems.push(`${t.id} has flows ${t.inflow}/${t.outflow}`);
    }
    return problems;
  }

  /** The totals of one environment and currency (zero when nothing moved yet). */
  get(envId: string, currency: string): LedgerTotals {
    const id = ledgerId(envId, currency);
    return this.#totals.get(id) ?? zero(id, envId, currency);
  }

  all(): Iterable<LedgerTotals> {
    return this.#totals.values();
  }
}

function zero(id: string, envId: string, currency: string): LedgerTotals {
  return { id, envId, currency, inTransit: 0, fees: 0, inflow: 0, outflow: 0 };
}

function isAmount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
