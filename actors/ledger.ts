// The environment-wide ledger totals of CONTRACT.md "Money": per environment and currency,
// the money in transit (debited from a source, not yet settled, refunded or lost) and the
// fees taken, and the money that entered or left the service without passing through an
// internal account (a direct pull's fees, and its principal as it is converted). With
// them the ledger invariant reads, per environment and currency:
//   sum(balances) + in transit + fees = inflow - outflow
// (accounts' flows plus these; checked by InternalAccounts.checkInvariants).
//
// Who owns them: nobody. Every movement is decided from the accounts and the transaction
// it concerns (a refund returns that transaction's own amounts), and the totals only
// change as a consequence, in the applier of the same event. So they are derived sums,
// changed by any entry in log order (apply is serial), and no actor needs to be held for
// them. They are records (snapshotted like any other) rather than an index rebuilt on
// restore, because the transactions that add up to them do not all stay in flight: a
// settled payout's in-transit amount is gone, its fee stays.
//
// The one thing decided with them is the intake bound (docs/money.md "The intake bound"):
// a decision that adds to what an environment has taken in reads the total (its `inflow`
// is part of it) and refuses past Number.MAX_SAFE_INTEGER. Reading without holding an
// actor is sound because a decision is synchronous and the engine applies it in the run
// that makes it (Engine.exec), so no other entry lands between the check and the apply;
// entries of other actors come wholly before it or after it.
import { invalidField } from './errors.js';
import { RecordMap, type Appliers, type RecordKind } from './registry.js';

/**
 * What an environment has taken in, per currency: the ledger's inflow, every account's
 * inflow, and the incoming payments recorded and awaiting approval (their money is
 * committed to the receiver from the moment the payment is accepted, so an approval adds
 * nothing new). Per environment and currency,
 *   sum(balances) + in transit + fees = inflow - outflow
 * with every term non-negative, and every outflow is money that came in first, so each
 * balance, in-transit amount, fee total, refund and flow counter is at most this intake.
 * It only grows (flows are cumulative), and it is what the bound holds below 2^53.
 */
export interface Intake {
  intakeOf(envId: string, currency: string): number;
}

/** One addition a decision makes to an environment's intake. */
export interface IntakeCredit {
  readonly currency: string;
  readonly amount: number;
}

/**
 * Refuses a decision whose credits would take the environment's intake of a currency past
 * Number.MAX_SAFE_INTEGER: 400 INVALID_INPUT naming `field`, the request's (or its
 * quote's) amount. Credits of one currency add up: a same-currency direct pull takes in
 * the pulled total (ledger inflow) and credits the received amount (account inflow).
 * Called in a decision, which is synchronous (see the module comment).
 */
export function assertIntakeRoom(intake: Intake, envId: string, credits: readonly IntakeCredit[], field: string): void {
  const adding = new Map<string, number>();
  for (const c of credits) adding.set(c.currency, (adding.get(c.currency) ?? 0) + c.amount);
  for (const [currency, amount] of adding) {
    const taken = intake.intakeOf(envId, currency);
    // Exact: 0 <= taken <= MAX_SAFE_INTEGER. Credits adding up past 2^53 may round, but stay larger.
    if (amount > Number.MAX_SAFE_INTEGER - taken) {
      throw invalidField(
        field,
        `the environment has taken in ${taken} ${currency}; ${amount} more would pass ${Number.MAX_SAFE_INTEGER}, the largest amount the service can hold`,
      );
    }
  }
}

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

/** A payment's entry, as far as the totals read it. */
type LedgerEvent = { type: 'payment.recorded'; ledger: readonly LedgerDelta[] };

export class Ledger implements RecordKind<LedgerTotals, LedgerEvent> {
  readonly idPrefix = 'Ledger:';
  /**
   * Any decision adds to an environment's totals without holding the environment: each
   * entry's deltas are additions, which commute, and the one check against them (intake)
   * runs in a decision, in the same run as its apply.
   */
  actorOf(): undefined {
    return undefined;
  }
  readonly #totals = new RecordMap<LedgerTotals>();
  readonly records: ReadonlyMap<string, LedgerTotals> = this.#totals;

  readonly appliers: Appliers<LedgerEvent> = {
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
        // Unreachable from a decision: each of these is at most the environment's intake (see
        // Intake), which every decision adding to it holds to MAX_SAFE_INTEGER, and no other
        // step (a settlement, a refund, a return, an approval) adds to it. A throw here is a
        // bug and stops the process (README "One entry per decision").
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

/** A stored amount: a whole number of smallest units, never negative, exactly representable. */
export function isAmount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
