// What the simulation expects of the service's money, from acknowledged replies alone: every
// internal account it knows, what was funded into it, and every transaction an answer
// named, with what it moves out of and into which account. A transaction's effect follows
// the status the service reports for it (a refund gives back, a completed credit arrives);
// the balance the service reports must be exactly what those effects add up to.

/** How a transaction moves money, by what asked for it. */
export type MoveKind = 'payout' | 'internal' | 'transfer-out' | 'transfer-in' | 'incoming';

export interface ModelTransaction {
  id: string;
  kind: MoveKind;
  /** The internal account debited, and by how much (0: none). */
  source: string | undefined;
  debit: number;
  /** The internal account credited once COMPLETED, and by how much. */
  destination: string | undefined;
  credit: number;
  /** Failed at execute (a payout refused at once): nothing moved. */
  failedAtExecute: boolean;
  /** The quote that made it ('' none): a payment between internal accounts is two transactions of one quote. */
  quoteId: string;
  /** The last status read or answered. */
  status: string;
}

export interface ModelAccount {
  id: string;
  currency: string;
  /** Sandbox funding acknowledged into it. */
  funded: number;
}

/** Statuses in the order a transaction may pass them; a status never goes back. */
const STATUS_RANK: Readonly<Record<string, number>> = {
  CREATED: 0,
  PENDING: 1,
  PROCESSING: 2,
  COMPLETED: 3,
  FAILED: 4,
  REJECTED: 4,
  EXPIRED: 4,
  REFUNDED: 5,
};

export class MoneyModel {
  readonly accounts = new Map<string, ModelAccount>();
  readonly transactions = new Map<string, ModelTransaction>();
  /** Payments between internal accounts by their quote, for the credit side the service adds. */
  readonly #internalByQuote = new Map<string, ModelTransaction>();

  addAccount(account: Omit<ModelAccount, 'funded'>): void {
    if (!this.accounts.has(account.id)) this.accounts.set(account.id, { ...account, funded: 0 });
  }

  /** Acknowledged sandbox fundings by `${account} ${amount}`: each is one SANDBOX_FUNDING transaction, whose id no answer names. */
  readonly fundings = new Map<string, number>();

  funded(accountId: string, amount: number): void {
    const account = this.accounts.get(accountId);
    if (account === undefined) return;
    account.funded += amount;
    const key = fundingKey(accountId, amount);
    this.fundings.set(key, (this.fundings.get(key) ?? 0) + 1);
  }

  /**
   * A transaction an answer named; a second answer naming it (a retry with the same key, whose
   * answer is the first one again, status included) must name the same money. Returns a violation.
   */
  recordTransaction(tx: ModelTransaction): string | undefined {
    const known = this.transactions.get(tx.id);
    if (known === undefined) {
      this.transactions.set(tx.id, tx);
      if (tx.kind === 'internal') this.#internalByQuote.set(tx.quoteId, tx);
      return undefined;
    }
    if (known.kind !== tx.kind || known.debit !== tx.debit || known.credit !== tx.credit || known.source !== tx.source || known.destination !== tx.destination) {
      return `transaction ${tx.id} was answered twice with different money: ${describe(known)} then ${describe(tx)}`;
    }
    return undefined;
  }

  /** The service reports `status` for a known transaction; a status that goes back is a violation. */
  observe(id: string, status: string): string | undefined {
    const tx = this.transactions.get(id);
    if (tx === undefined) return undefined;
    const from = STATUS_RANK[tx.status];
    const to = STATUS_RANK[status];
    if (to === undefined) return `transaction ${id} has unknown status ${status}`;
    if (from !== undefined && (to < from || (to === from && status !== tx.status))) return `transaction ${id} went from ${tx.status} back to ${status}`;
    tx.status = status;
    return undefined;
  }

  /** The payment a quote made between two internal accounts (its debit's transaction), if the model knows it. */
  internalPaymentOf(quoteId: string): ModelTransaction | undefined {
    return this.#internalByQuote.get(quoteId);
  }

  /** The balance each account must have, given the statuses last observed. */
  expectedBalances(): Map<string, number> {
    const balances = new Map<string, number>();
    for (const account of this.accounts.values()) balances.set(account.id, account.funded);
    const add = (accountId: string, amount: number): void => {
      const balance = balances.get(accountId);
      if (balance !== undefined) balances.set(accountId, balance + amount);
    };
    for (const tx of this.transactions.values()) {
      if (tx.source !== undefined && !released(tx)) add(tx.source, -tx.debit);
      if (tx.destination !== undefined && tx.status === 'COMPLETED') add(tx.destination, tx.credit);
    }
    return balances;
  }
}

/** Whether a transaction's debit went back to its source (or never left it). */
function released(tx: ModelTransaction): boolean {
  if (tx.failedAtExecute || tx.status === 'REFUNDED') return true;
  // A transfer-out that fails or is rejected refunds in the same step (CONTRACT.md, Money).
  return tx.kind === 'transfer-out' && (tx.status === 'FAILED' || tx.status === 'REJECTED');
}

function describe(tx: ModelTransaction): string {
  return `${tx.kind} ${tx.source ?? '-'} -${tx.debit} ${tx.destination ?? '-'} +${tx.credit}`;
}

export function fundingKey(accountId: string, amount: number): string {
  return `${accountId} ${amount}`;
}
