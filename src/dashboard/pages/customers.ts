// Customers: the list, searched by platform customer ID, UMA address or email, a form that
// creates one, and a customer's page with its internal accounts and their balances, its
// external accounts and its transactions.
import { ApiError, call, describe, type Page, type Token } from '../api.js';
import { h, money, show } from '../dom.js';
import { hashOf, type DashboardPage, type PageContext } from '../page.js';
import { queryOf, showPaged } from './paged.js';
import { transactionTable, type Transaction } from './transactions.js';

interface Customer {
  id: string;
  customerType: 'INDIVIDUAL' | 'BUSINESS';
  platformCustomerId: string;
  umaAddress: string;
  region: string;
  currencies: string[];
  email?: string;
  fullName?: string;
  businessInfo?: { legalName: string };
  kycStatus?: string;
  kybStatus?: string;
  isDeleted: boolean;
  createdAt: string;
}

interface InternalAccount {
  id: string;
  type: string;
  balance: { amount: number; currency: { code: string; decimals: number } };
}

interface ExternalAccount {
  id: string;
  status: string;
  currency: string;
  accountInfo: { accountType: string; accountNumber?: string; address?: string };
}

/** What the search looks in: each is a GET /customers filter. */
type SearchField = 'platformCustomerId' | 'umaAddress' | 'email';

export const customersPage: DashboardPage = {
  name: 'Customers',
  path: 'customers',
  render: (ctx) => (ctx.params[0] === undefined ? customerList(ctx) : customerDetail(ctx, ctx.params[0])),
};

/** A person's full name, or a business's legal name. */
function nameOf(customer: Customer): string {
  return customer.fullName ?? customer.businessInfo?.legalName ?? '';
}

function customerTable(customers: readonly Customer[], label: string): HTMLElement {
  const head = ['Name', 'Platform customer ID', 'Type', 'UMA address', 'Email', 'Created'].map((name) => h('th', { scope: 'col' }, name));
  const rows = customers.map((customer) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: hashOf('customers', customer.id) }, nameOf(customer) || customer.id)),
      h('td', {}, customer.platformCustomerId),
      h('td', {}, customer.customerType),
      h('td', {}, customer.umaAddress),
      h('td', {}, customer.email ?? ''),
      h('td', {}, customer.createdAt),
    ),
  );
  return h('table', { 'aria-label': label }, h('thead', {}, h('tr', {}, ...head)), h('tbody', {}, ...rows));
}

async function customerList({ token, main, navigate }: PageContext): Promise<void> {
  const searchField = h(
    'select',
    { id: 'search-field', name: 'searchField' },
    h('option', { value: 'platformCustomerId' }, 'Platform customer ID'),
    h('option', { value: 'email' }, 'Email'),
    h('option', { value: 'umaAddress' }, 'UMA address'),
  );
  const searchText = h('input', { id: 'search-text', name: 'searchText', type: 'search' });
  const results = h('div', {});
  const search = h(
    'form',
    { 'aria-label': 'Search customers', role: 'search' },
    h('label', { for: 'search-field' }, 'Search by'),
    searchField,
    h('label', { for: 'search-text' }, 'Search for'),
    searchText,
    h('button', { type: 'submit' }, 'Search customers'),
  );
  const list = (): Promise<void> => {
    const text = searchText.value.trim();
    const field = searchField.value as SearchField;
    return showPaged(results, {
      noun: 'customers',
      read: (cursor) => call<Page<Customer>>(token, 'GET', `/customers${queryOf({ [field]: text, limit: '20', cursor })}`),
      table: (customers) => customerTable(customers, 'Customers'),
    });
  };
  search.addEventListener('submit', (event) => {
    event.preventDefault();
    void list();
  });
  show(main, h('h2', {}, 'Customers'), search, results, createForm(token, navigate));
  await list();
}

/** A labelled input with the place its API field error goes. */
interface FormField {
  /** The request body's field (a dotted path for nested ones). */
  field: string;
  input: HTMLInputElement | HTMLSelectElement;
  error: HTMLElement;
}

function formField(field: string, label: string, input: HTMLInputElement | HTMLSelectElement): { row: HTMLElement; formField: FormField } {
  const error = h('span', { id: `${input.id}-error`, role: 'alert' });
  input.setAttribute('aria-describedby', error.id);
  return { row: h('div', { class: 'field' }, h('label', { for: input.id }, label), input, error), formField: { field, input, error } };
}

function createForm(token: Token, navigate: PageContext['navigate']): HTMLElement {
  const type = h('select', { id: 'new-customer-type', name: 'customerType' }, h('option', { value: 'INDIVIDUAL' }, 'Individual'), h('option', { value: 'BUSINESS' }, 'Business'));
  const input = (id: string, kind = 'text'): HTMLInputElement => h('input', { id, name: id, type: kind });
  const rows = [
    formField('customerType', 'Customer type', type),
    formField('fullName', 'Full name', input('new-customer-full-name')),
    formField('platformCustomerId', 'Platform customer ID', input('new-customer-platform-id')),
    formField('email', 'Email', input('new-customer-email', 'email')),
    formField('businessInfo.legalName', 'Legal name (business)', input('new-customer-legal-name')),
    formField('businessInfo.country', 'Country (business, 2 letters)', input('new-customer-country')),
    formField('businessInfo.taxId', 'Tax ID (business)', input('new-customer-tax-id')),
    formField('businessInfo.incorporatedOn', 'Incorporated on (business)', input('new-customer-incorporated-on', 'date')),
  ];
  const fields = rows.map((row) => row.formField);
  const problem = h('p', { role: 'alert' });
  // novalidate: the API's own checks answer, each next to its field, rather than the browser's.
  const form = h('form', { 'aria-label': 'Create customer', novalidate: true }, h('h3', {}, 'Create customer'), ...rows.map((row) => row.row), h('button', { type: 'submit' }, 'Create customer'), problem);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    for (const { error } of fields) show(error);
    show(problem);
    call<Customer>(token, 'POST', '/customers', bodyOf(fields)).then(
      (customer) => navigate('customers', customer.id),
      (err: unknown) => showFieldErrors(err, fields, problem),
    );
  });
  return form;
}

/** The create request: the fields filled in, dotted names nested; business details only for a business. */
function bodyOf(fields: readonly FormField[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const business: Record<string, string> = {};
  for (const { field, input } of fields) {
    const value = input.value.trim();
    if (value === '') continue;
    if (field.startsWith('businessInfo.')) business[field.slice('businessInfo.'.length)] = value;
    else body[field] = value;
  }
  if (body.customerType === 'BUSINESS') body.businessInfo = business;
  return body;
}

/** Each API field error next to its field (the API names nested ones dotted, as the form does); the whole error in `problem`. */
function showFieldErrors(err: unknown, fields: readonly FormField[], problem: HTMLElement): void {
  show(problem, describe(err));
  if (!(err instanceof ApiError)) return;
  for (const detail of err.details) {
    const target = fields.find(({ field }) => detail.field === field);
    if (target === undefined) continue;
    show(target.error, detail.message);
    target.input.setAttribute('aria-invalid', 'true');
  }
}

async function customerDetail({ token, main }: PageContext, id: string): Promise<void> {
  show(main, h('h2', {}, 'Customer'), h('p', {}, 'Loading…'));
  const query = `customerId=${encodeURIComponent(id)}&limit=100`;
  const [customer, internal, external] = await Promise.all([
    call<Customer>(token, 'GET', `/customers/${encodeURIComponent(id)}`),
    call<Page<InternalAccount>>(token, 'GET', `/customers/internal-accounts?${query}`),
    call<Page<ExternalAccount>>(token, 'GET', `/customers/external-accounts?${query}`),
  ]);
  const fields: Array<[string, string]> = [
    ['Name', nameOf(customer)],
    ['ID', customer.id],
    ['Platform customer ID', customer.platformCustomerId],
    ['Type', customer.customerType],
    ['UMA address', customer.umaAddress],
    ['Email', customer.email ?? ''],
    ['Region', customer.region],
    ['Verification', customer.kycStatus ?? customer.kybStatus ?? ''],
    ['Deleted', customer.isDeleted ? 'yes' : 'no'],
    ['Created', customer.createdAt],
  ];
  const transactions = h('div', {});
  show(
    main,
    h('h2', {}, 'Customer'),
    h('dl', { 'aria-label': 'Customer details' }, ...fields.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)])),
    h('h3', {}, 'Internal accounts'),
    internalTable(internal.data),
    h('h3', {}, 'External accounts'),
    external.data.length === 0 ? h('p', {}, 'No external accounts.') : externalTable(external.data),
    h('h3', {}, 'Transactions'),
    transactions,
    h('p', {}, h('a', { href: hashOf('customers') }, 'All customers')),
  );
  await showPaged(transactions, {
    noun: 'transactions',
    read: (cursor) => call<Page<Transaction>>(token, 'GET', `/transactions${queryOf({ customerId: id, limit: '20', cursor })}`),
    table: (page) => transactionTable(page, 'Customer transactions'),
  });
}

function internalTable(accounts: readonly InternalAccount[]): HTMLElement {
  const rows = accounts.map((account) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, account.id),
      h('td', {}, account.type),
      h('td', {}, account.balance.currency.code),
      h('td', {}, money(account.balance.amount, account.balance.currency.decimals, account.balance.currency.code)),
    ),
  );
  const head = ['Account', 'Type', 'Currency', 'Balance'].map((name) => h('th', { scope: 'col' }, name));
  return h('table', { 'aria-label': 'Internal accounts' }, h('thead', {}, h('tr', {}, ...head)), h('tbody', {}, ...rows));
}

function externalTable(accounts: readonly ExternalAccount[]): HTMLElement {
  const rows = accounts.map((account) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, account.id),
      h('td', {}, account.accountInfo.accountType),
      h('td', {}, account.currency),
      // Only the last four digits: the dashboard is read over people's shoulders.
      h('td', {}, account.accountInfo.accountNumber === undefined ? (account.accountInfo.address ?? '') : `…${account.accountInfo.accountNumber.slice(-4)}`),
      h('td', {}, account.status),
    ),
  );
  const head = ['Account', 'Kind', 'Currency', 'Number', 'Status'].map((name) => h('th', { scope: 'col' }, name));
  return h('table', { 'aria-label': 'External accounts' }, h('thead', {}, h('tr', {}, ...head)), h('tbody', {}, ...rows));
}
