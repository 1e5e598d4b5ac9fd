// Transactions: the list with the API's filters (status, type, customer, dates), and one
// transaction's page, where a pending incoming UMA payment waiting for the platform's
// decision can be approved or rejected.
import { call, describe, type Page, type Token } from '../api.js';
import { h, money, show, statusBadge } from '../dom.js';
import { hashOf, type DashboardPage, type PageContext } from '../page.js';
import { queryOf, showPaged } from './paged.js';

interface Amount {
  amount: number;
  currency: { code: string; decimals: number };
}

export interface Transaction {
  id: string;
  status: string;
  type: string;
  direction: string;
  source: { sourceType: string; umaAddress?: string; accountId?: string };
  destination: { destinationType?: string; accountId?: string; umaAddress?: string };
  customerId: string;
  platformCustomerId: string;
  sentAmount?: Amount;
  receivedAmount: Amount;
  description?: string;
  failureReason?: string;
  settledAt?: string;
  createdAt: string;
}

/** The API's transaction statuses and types (docs/api.md "Transactions"). */
const STATUSES = ['CREATED', 'PENDING', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED'] as const;
const TYPES = ['INCOMING', 'OUTGOING'] as const;

export const transactionsPage: DashboardPage = {
  name: 'Transactions',
  path: 'transactions',
  render: (ctx) => (ctx.params[0] === undefined ? transactionList(ctx) : transactionDetail(ctx, ctx.params[0])),
};

const amountText = ({ amount, currency }: Amount): string => money(amount, currency.decimals, currency.code);

/** A table of transactions, each linked to its page. */
export function transactionTable(transactions: readonly Transaction[], label: string): HTMLElement {
  const head = ['Transaction', 'Type', 'Status', 'Amount', 'Customer', 'Created'].map((name) => h('th', { scope: 'col' }, name));
  const rows = transactions.map((tx) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: hashOf('transactions', tx.id) }, tx.id)),
      h('td', {}, tx.type),
      h('td', {}, statusBadge(tx.status)),
      h('td', {}, amountText(tx.receivedAmount)),
      h('td', {}, tx.customerId === '' ? '' : h('a', { href: hashOf('customers', tx.customerId) }, tx.platformCustomerId || tx.customerId)),
      h('td', {}, tx.createdAt),
    ),
  );
  return h('table', { 'aria-label': label }, h('thead', {}, h('tr', {}, ...head)), h('tbody', {}, ...rows));
}

function choice(id: string, label: string, options: readonly string[]): [HTMLLabelElement, HTMLSelectElement] {
  const select = h('select', { id, name: id }, h('option', { value: '' }, 'Any'), ...options.map((option) => h('option', { value: option }, option)));
  return [h('label', { for: id }, label), select];
}

function textInput(id: string, label: string, type = 'text'): [HTMLLabelElement, HTMLInputElement] {
  return [h('label', { for: id }, label), h('input', { id, name: id, type })];
}

async function transactionList({ token, main }: PageContext): Promise<void> {
  const [statusLabel, status] = choice('filter-status', 'Status', STATUSES);
  const [typeLabel, type] = choice('filter-type', 'Type', TYPES);
  const [customerLabel, customerId] = textInput('filter-customer', 'Customer ID');
  const [fromLabel, from] = textInput('filter-from', 'Created from (date)', 'date');
  const [toLabel, to] = textInput('filter-to', 'Created to (date)', 'date');
  const results = h('div', {});
  const filters = h(
    'form',
    { 'aria-label': 'Filter transactions', class: 'filters' },
    statusLabel,
    status,
    typeLabel,
    type,
    customerLabel,
    customerId,
    fromLabel,
    from,
    toLabel,
    to,
    h('button', { type: 'submit' }, 'Apply filters'),
  );
  const list = (): Promise<void> => {
    const query = {
      status: status.value,
      type: type.value,
      customerId: customerId.value.trim(),
      startDate: from.value,
      // The API's bounds are inclusive instants and a bare date is its midnight: the last
      // millisecond of the day keeps the whole "to" day in.
      endDate: to.value === '' ? '' : `${to.value}T23:59:59.999Z`,
      limit: '20',
    };
    return showPaged(results, {
      noun: 'transactions',
      read: (cursor) => call<Page<Transaction>>(token, 'GET', `/transactions${queryOf({ ...query, cursor })}`),
      table: (transactions) => transactionTable(transactions, 'Transactions'),
    });
  };
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    void list();
  });
  show(main, h('h2', {}, 'Transactions'), filters, results);
  await list();
}

/** An incoming UMA payment the platform has yet to approve or reject (docs/api.md "Approving incoming payments"). */
function awaitsApproval(tx: Transaction): boolean {
  return tx.status === 'PENDING' && tx.type === 'INCOMING' && tx.source.sourceType === 'UMA_ADDRESS';
}

async function transactionDetail({ token, main }: PageContext, id: string): Promise<void> {
  show(main, h('h2', {}, 'Transaction'), h('p', {}, 'Loading…'));
  showTransaction(token, main, await call<Transaction>(token, 'GET', `/transactions/${encodeURIComponent(id)}`));
}

function showTransaction(token: Token, main: HTMLElement, tx: Transaction): void {
  const problem = h('p', { role: 'alert' });
  const approve = h('button', { type: 'button' }, 'Approve payment');
  const reject = h('button', { type: 'button' }, 'Reject payment');
  const decide = (decision: 'approve' | 'reject') => (): void => {
    // One decision at a time: a second click would only be refused as no longer pending.
    approve.disabled = reject.disabled = true;
    call<Transaction>(token, 'POST', `/transactions/${encodeURIComponent(tx.id)}/${decision}`).then(
      (decided) => showTransaction(token, main, decided),
      (err: unknown) => {
        approve.disabled = reject.disabled = false;
        show(problem, describe(err));
      },
    );
  };
  approve.addEventListener('click', decide('approve'));
  reject.addEventListener('click', decide('reject'));
  const fields: Array<[string, Node | string]> = [
    ['ID', tx.id],
    ['Status', statusBadge(tx.status)],
    ['Type', tx.type],
    ['Direction', tx.direction],
    ['Received', amountText(tx.receivedAmount)],
    ['Sent', tx.sentAmount === undefined ? '' : amountText(tx.sentAmount)],
    ['Source', tx.source.umaAddress ?? tx.source.accountId ?? tx.source.sourceType],
    ['Destination', tx.destination.accountId ?? tx.destination.umaAddress ?? tx.destination.destinationType ?? ''],
    ['Customer', tx.customerId === '' ? '' : h('a', { href: hashOf('customers', tx.customerId) }, tx.platformCustomerId || tx.customerId)],
    ['Description', tx.description ?? ''],
    ['Failure reason', tx.failureReason ?? ''],
    ['Created', tx.createdAt],
    ['Settled', tx.settledAt ?? ''],
  ];
  show(
    main,
    h('h2', {}, 'Transaction'),
    h('dl', { 'aria-label': 'Transaction details' }, ...fields.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)])),
    awaitsApproval(tx) ? h('p', {}, approve, ' ', reject) : null,
    problem,
    h('p', {}, h('a', { href: hashOf('transactions') }, 'All transactions')),
  );
}
