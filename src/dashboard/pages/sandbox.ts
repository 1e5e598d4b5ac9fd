// Sandbox (sandbox tokens only): the test network's stand-ins for money from outside. Fund
// an internal account (POST /sandbox/internal-accounts/{id}/fund), simulate an incoming
// UMA payment from a test address (POST /sandbox/uma/receive), and send the money a
// REALTIME_FUNDING quote asks for (POST /sandbox/send); README "Sandbox magic values".
import { call, describe, type Page, type Token } from '../api.js';
import { h, money, show } from '../dom.js';
import type { DashboardPage, PageContext } from '../page.js';

interface InternalAccount {
  id: string;
  type: string;
  customerId: string;
  balance: { amount: number; currency: { code: string; decimals: number } };
}

interface Transaction {
  id: string;
  status: string;
}

/** The accounts the page lists and offers to fund: one page of the API's largest size. */
const ACCOUNTS_SHOWN = 100;
/** A sender on the sandbox's test network (docs/api.md: UMA test addresses). */
const TEST_SENDER = '$success.usd@sandbox.uma.test';

export const sandboxPage: DashboardPage = { name: 'Sandbox', path: 'sandbox', sandboxOnly: true, render: sandbox };

async function sandbox({ token, main }: PageContext): Promise<void> {
  show(main, h('h2', {}, 'Sandbox'), h('p', {}, 'Loading…'));
  const accounts = h('div', {});
  const account = h('select', { id: 'fund-account', name: 'accountId', required: true });
  const refresh = async (): Promise<void> => {
    const page = await call<Page<InternalAccount>>(token, 'GET', `/internal-accounts?limit=${ACCOUNTS_SHOWN}`);
    const chosen = account.value;
    show(account, ...page.data.map((each) => h('option', { value: each.id, selected: each.id === chosen }, `${each.id} (${balanceOf(each)})`)));
    show(accounts, accountTable(page));
  };
  await refresh();
  show(main, h('h2', {}, 'Sandbox'), fundForm(token, account, refresh), accounts, umaForm(token), sendForm(token));
}

function balanceOf(account: InternalAccount): string {
  return money(account.balance.amount, account.balance.currency.decimals, account.balance.currency.code);
}

function accountTable(page: Page<InternalAccount>): HTMLElement {
  const rows = page.data.map((account) =>
    h('tr', {}, h('th', { scope: 'row' }, account.id), h('td', {}, account.type), h('td', {}, account.customerId === '' ? 'platform' : account.customerId), h('td', {}, balanceOf(account))),
  );
  return h(
    'div',
    {},
    h(
      'table',
      { 'aria-label': 'Internal accounts' },
      h('thead', {}, h('tr', {}, ...['Account', 'Type', 'Customer', 'Balance'].map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, ...rows),
    ),
    page.hasMore ? h('p', {}, `The first ${page.data.length} of ${page.totalCount} accounts.`) : null,
  );
}

/** A labelled input: `<label for>` names it, as every control on the page is named. */
function labelled(input: HTMLInputElement | HTMLSelectElement, label: string): HTMLElement {
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input);
}

/** Submits `form` with `send`, saying the outcome (or the API's error) in `result`. */
function onSubmit(form: HTMLFormElement, result: HTMLElement, send: () => Promise<string>): void {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    show(result, 'Sending…');
    send().then(
      (outcome) => show(result, outcome),
      (err: unknown) => show(result, describe(err)),
    );
  });
}

/** Whole smallest units, as the API takes them; anything else goes as typed so the API names the field. */
function amountOf(input: HTMLInputElement): number | string {
  const value = input.value.trim();
  return /^\d+$/.test(value) ? Number(value) : value;
}

function fundForm(token: Token, account: HTMLSelectElement, refresh: () => Promise<void>): HTMLElement {
  const amount = h('input', { id: 'fund-amount', name: 'amount', type: 'text', inputmode: 'numeric', required: true });
  const result = h('p', { role: 'status', 'aria-label': 'Funding result' });
  const form = h(
    'form',
    { 'aria-label': 'Fund an internal account' },
    h('h3', {}, 'Fund an internal account'),
    labelled(account, 'Account to fund'),
    labelled(amount, "Amount to fund (the currency's smallest unit, e.g. cents)"),
    h('button', { type: 'submit' }, 'Fund account'),
    result,
  );
  onSubmit(form, result, async () => {
    const funded = await call<InternalAccount>(token, 'POST', `/sandbox/internal-accounts/${encodeURIComponent(account.value)}/fund`, { amount: amountOf(amount) });
    await refresh();
    return `Funded ${funded.id}: balance ${balanceOf(funded)}.`;
  });
  return form;
}

function umaForm(token: Token): HTMLElement {
  const sender = h('input', { id: 'uma-sender', name: 'senderUmaAddress', type: 'text', value: TEST_SENDER, required: true });
  const receiver = h('input', { id: 'uma-receiver', name: 'receiverUmaAddress', type: 'text' });
  const customer = h('input', { id: 'uma-customer', name: 'customerId', type: 'text' });
  const currency = h('input', { id: 'uma-currency', name: 'receivingCurrencyCode', type: 'text', value: 'USD', required: true });
  const amount = h('input', { id: 'uma-amount', name: 'receivingCurrencyAmount', type: 'text', inputmode: 'numeric', required: true });
  const result = h('p', { role: 'status', 'aria-label': 'Incoming UMA payment result' });
  const form = h(
    'form',
    { 'aria-label': 'Simulate an incoming UMA payment' },
    h('h3', {}, 'Simulate an incoming UMA payment'),
    labelled(sender, 'Sender UMA address (a sandbox.uma.test address)'),
    labelled(receiver, 'Receiver UMA address (optional)'),
    labelled(customer, 'Receiving customer ID (optional)'),
    labelled(currency, 'Receiving currency code'),
    labelled(amount, "Receiving amount (the currency's smallest unit)"),
    h('button', { type: 'submit' }, 'Simulate incoming UMA payment'),
    result,
  );
  onSubmit(form, result, async () => {
    const body: Record<string, unknown> = { senderUmaAddress: sender.value.trim(), receivingCurrencyCode: currency.value.trim(), receivingCurrencyAmount: amountOf(amount) };
    if (receiver.value.trim() !== '') body['receiverUmaAddress'] = receiver.value.trim();
    if (customer.value.trim() !== '') body['customerId'] = customer.value.trim();
    const tx = await call<Transaction>(token, 'POST', '/sandbox/uma/receive', body);
    return `Incoming payment ${tx.id}: ${tx.status}.`;
  });
  return form;
}

function sendForm(token: Token): HTMLElement {
  const quote = h('input', { id: 'send-quote', name: 'quoteId', type: 'text' });
  const reference = h('input', { id: 'send-reference', name: 'reference', type: 'text' });
  const currency = h('input', { id: 'send-currency', name: 'currencyCode', type: 'text', value: 'USD', required: true });
  const amount = h('input', { id: 'send-amount', name: 'currencyAmount', type: 'text', inputmode: 'numeric' });
  const result = h('p', { role: 'status', 'aria-label': 'Send result' });
  const form = h(
    'form',
    { 'aria-label': 'Send funds for a quote' },
    h('h3', {}, "Send a quote's funds from outside"),
    labelled(quote, 'Quote ID (or give the reference and amount)'),
    labelled(reference, "Payment instructions' reference"),
    labelled(currency, 'Currency code sent'),
    labelled(amount, "Amount sent (the currency's smallest unit)"),
    h('button', { type: 'submit' }, 'Send funds'),
    result,
  );
  onSubmit(form, result, async () => {
    const body: Record<string, unknown> = { currencyCode: currency.value.trim() };
    if (quote.value.trim() !== '') body['quoteId'] = quote.value.trim();
    if (reference.value.trim() !== '') body['reference'] = reference.value.trim();
    if (amount.value.trim() !== '') body['currencyAmount'] = amountOf(amount);
    const tx = await call<Transaction>(token, 'POST', '/sandbox/send', body);
    return `Sent: transaction ${tx.id}, ${tx.status}.`;
  });
  return form;
}
