// Overview: balances per currency across the environment's internal accounts, and counts
// of customers, transactions and webhook events waiting for delivery.
import { call, type Page, type Token } from '../api.js';
import { h, money, show } from '../dom.js';
import type { DashboardPage, PageContext } from '../page.js';

interface InternalAccount {
  id: string;
  balance: { amount: number; currency: { code: string; decimals: number } };
}

/** Pages of internal accounts the overview sums at most: past them it says how many it read. */
const OVERVIEW_MAX_PAGES = 20;

export const overviewPage: DashboardPage = { name: 'Overview', path: 'overview', render: overview };

async function overview({ token, main }: PageContext): Promise<void> {
  show(main, h('h2', {}, 'Overview'), h('p', {}, 'Loading…'));
  const [balances, customers, transactions, pending] = await Promise.all([
    balancesByCurrency(token),
    call<Page<unknown>>(token, 'GET', '/customers?limit=1'),
    call<Page<unknown>>(token, 'GET', '/transactions?limit=1'),
    call<Page<unknown>>(token, 'GET', '/webhooks/events?deliveryStatus=PENDING&limit=1'),
  ]);
  const rows = [...balances.totals].map(([code, { amount, decimals }]) => h('tr', {}, h('th', { scope: 'row' }, code), h('td', {}, money(amount, decimals, code))));
  show(
    main,
    h('h2', {}, 'Overview'),
    h('table', { 'aria-label': 'Balances per currency' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Currency'), h('th', { scope: 'col' }, 'Balance'))), h('tbody', {}, ...rows)),
    balances.complete ? null : h('p', {}, `Summed over the first ${balances.accounts} internal accounts.`),
    h(
      'dl',
      { 'aria-label': 'Counts' },
      h('dt', {}, 'Customers'),
      h('dd', {}, customers.totalCount),
      h('dt', {}, 'Transactions'),
      h('dd', {}, transactions.totalCount),
      h('dt', {}, 'Webhook events waiting'),
      h('dd', {}, pending.totalCount),
    ),
  );
}

/** Every internal account's balance, summed per currency (at most OVERVIEW_MAX_PAGES pages). */
async function balancesByCurrency(token: Token): Promise<{ totals: Map<string, { amount: number; decimals: number }>; accounts: number; complete: boolean }> {
  const totals = new Map<string, { amount: number; decimals: number }>();
  let cursor: string | undefined;
  let accounts = 0;
  for (let page = 0; page < OVERVIEW_MAX_PAGES; page++) {
    const query = `/internal-accounts?limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const result = await call<Page<InternalAccount>>(token, 'GET', query);
    for (const account of result.data) {
      const { code, decimals } = account.balance.currency;
      const total = totals.get(code) ?? { amount: 0, decimals };
      totals.set(code, { amount: total.amount + account.balance.amount, decimals });
    }
    accounts += result.data.length;
    if (!result.hasMore || result.nextCursor === undefined) return { totals, accounts, complete: true };
    cursor = result.nextCursor;
  }
  return { totals, accounts, complete: false };
}

