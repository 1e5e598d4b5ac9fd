// Send money: a quote from one of the environment's internal accounts to an internal
// account, an external account or an UMA address, for an amount locked on the sending or
// the receiving side (POST /quotes); the quote's rate, fees, both amounts and the time left
// to execute it; then Execute (POST /quotes/{id}/execute) and the transaction it made.
import { call, describe, type Page, type Token } from '../api.js';
import { h, money, show } from '../dom.js';
import type { DashboardPage, PageContext } from '../page.js';

interface Currency {
  code: string;
  decimals: number;
}

interface InternalAccount {
  id: string;
  type: string;
  customerId: string;
  balance: { amount: number; currency: Currency };
}

interface ExternalAccount {
  id: string;
  currency: string;
  customerId: string | null;
}

interface UmaLookup {
  lookupId: string;
  supportedCurrencies: Array<{ currency: Currency }>;
}

interface Quote {
  id: string;
  status: string;
  expiresAt: string;
  sendingCurrency: Currency;
  receivingCurrency: Currency;
  totalSendingAmount: number;
  totalReceivingAmount: number;
  exchangeRate: number;
  feesIncluded: number;
  transactionId?: string;
}

interface Transaction {
  id: string;
  status: string;
  type: string;
}

type LockedSide = 'SENDING' | 'RECEIVING';

/** What the "To" list's choice names: an account by its id, or the UMA address typed beside it. */
const UMA_CHOICE = 'uma';
/** How often the expiry countdown ticks. */
const COUNTDOWN_TICK_MS = 1_000;

export const sendPage: DashboardPage = { name: 'Send money', path: 'send', render: send };

/** Every account of a list route, up to its first page of 100: enough to choose from here. */
async function firstHundred<T>(token: Token, path: string): Promise<T[]> {
  return (await call<Page<T>>(token, 'GET', `${path}?limit=100`)).data;
}

async function send({ token, main }: PageContext): Promise<void> {
  show(main, h('h2', {}, 'Send money'), h('p', {}, 'Loading…'));
  const [internal, external] = await Promise.all([firstHundred<InternalAccount>(token, '/internal-accounts'), firstHundred<ExternalAccount>(token, '/customers/external-accounts')]);
  // Decimals by currency code, for amounts typed in a currency only an external account names.
  const decimalsOf = new Map(internal.map((account) => [account.balance.currency.code, account.balance.currency.decimals]));
  const internalLabel = (account: InternalAccount): string =>
    `${account.id} (${account.type}, ${account.customerId === '' ? 'platform' : account.customerId}, ${money(account.balance.amount, account.balance.currency.decimals, account.balance.currency.code)})`;

  // An embedded wallet pays only on a stamp by its session's key, which this page does not hold.
  const sources = internal.filter((account) => account.type !== 'EMBEDDED_WALLET');
  const source = h('select', { id: 'send-source', required: true }, ...sources.map((account) => h('option', { value: account.id }, internalLabel(account))));
  const destination = h(
    'select',
    { id: 'send-destination', required: true },
    h('optgroup', { label: 'Internal accounts' }, ...internal.map((account) => h('option', { value: account.id }, internalLabel(account)))),
    h('optgroup', { label: 'External accounts' }, ...external.map((account) => h('option', { value: account.id }, `${account.id} (${account.currency}, ${account.customerId ?? 'platform'})`))),
    h('option', { value: UMA_CHOICE }, 'The UMA address below'),
  );
  const umaAddress = h('input', { id: 'send-uma-address', placeholder: '$name@example.com', autocomplete: 'off' });
  const amount = h('input', { id: 'send-amount', inputmode: 'decimal', required: true, pattern: '[0-9]+([.][0-9]+)?', autocomplete: 'off' });
  const lockedSide = h(
    'select',
    { id: 'send-locked-side' },
    h('option', { value: 'SENDING' }, 'Sending: the source pays exactly this amount'),
    h('option', { value: 'RECEIVING' }, 'Receiving: the destination gets exactly this amount'),
  );
  const quoteArea = h('section', { 'aria-label': 'Quote' });
  const problem = h('p', { role: 'alert' });
  const form = h(
    'form',
    { 'aria-label': 'Send money' },
    h('label', { for: 'send-source' }, 'From account'),
    source,
    h('p', {}, 'Embedded wallets are not offered to send from: paying from one needs a stamp by its session, which the dashboard cannot make.'),
    h('label', { for: 'send-destination' }, 'To'),
    destination,
    h('label', { for: 'send-uma-address' }, 'UMA address (when To is the UMA address)'),
    umaAddress,
    h('label', { for: 'send-amount' }, 'Amount'),
    amount,
    h('label', { for: 'send-locked-side' }, 'Locked side'),
    lockedSide,
    h('button', { type: 'submit' }, 'Get quote'),
  );
  // The countdown of the quote on show; a new quote (or leaving the page) stops the old one.
  let countdown: ReturnType<typeof setInterval> | undefined;
  const stopCountdown = (): void => clearInterval(countdown);
  window.addEventListener('hashchange', stopCountdown, { once: true });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    stopCountdown();
    show(problem);
    show(quoteArea);
    const side = lockedSide.value === 'RECEIVING' ? 'RECEIVING' : 'SENDING';
    const sourceAccount = sources.find((account) => account.id === source.value);
    if (sourceAccount === undefined) return show(problem, 'Choose the account to send from.');
    quoteFor(token, { sourceAccount, destinationChoice: destination.value, umaAddress: umaAddress.value.trim(), amountText: amount.value.trim(), side, internal, external, decimalsOf }).then(
      (quote) => {
        countdown = showQuote(token, quoteArea, problem, quote);
      },
      (err: unknown) => show(problem, describe(err)),
    );
  });
  show(main, h('h2', {}, 'Send money'), form, problem, quoteArea);
}

interface QuoteRequest {
  sourceAccount: InternalAccount;
  destinationChoice: string;
  umaAddress: string;
  amountText: string;
  side: LockedSide;
  internal: readonly InternalAccount[];
  external: readonly ExternalAccount[];
  decimalsOf: ReadonlyMap<string, number>;
}

/** POST /quotes for what the form says; an UMA address is looked up first, as the API requires. */
async function quoteFor(token: Token, request: QuoteRequest): Promise<Quote> {
  const { sourceAccount, destinationChoice, side } = request;
  let destination: Record<string, string>;
  let receivingDecimals: number | undefined;
  let lookupId: string | undefined;
  if (destinationChoice === UMA_CHOICE) {
    if (request.umaAddress === '') throw new Error('Type the UMA address to send to.');
    const lookup = await call<UmaLookup>(token, 'GET', `/receiver/uma/${encodeURIComponent(request.umaAddress)}`);
    lookupId = lookup.lookupId;
    destination = { destinationType: 'UMA_ADDRESS', umaAddress: request.umaAddress };
    receivingDecimals = lookup.supportedCurrencies[0]?.currency.decimals;
  } else {
    destination = { destinationType: 'ACCOUNT', accountId: destinationChoice };
    const internalDestination = request.internal.find((account) => account.id === destinationChoice);
    const externalDestination = request.external.find((account) => account.id === destinationChoice);
    receivingDecimals = internalDestination?.balance.currency.decimals ?? (externalDestination === undefined ? undefined : request.decimalsOf.get(externalDestination.currency));
  }
  const decimals = side === 'SENDING' ? sourceAccount.balance.currency.decimals : receivingDecimals;
  if (decimals === undefined) throw new Error('The receiving currency is not known here: lock the sending side instead.');
  const lockedCurrencyAmount = smallestUnits(request.amountText, decimals);
  return call<Quote>(token, 'POST', '/quotes', {
    source: { sourceType: 'ACCOUNT', accountId: sourceAccount.id },
    destination,
    lockedCurrencySide: side,
    lockedCurrencyAmount,
    ...(lookupId === undefined ? {} : { lookupId }),
  });
}

/** `12.34` with 2 decimals → 1234, exactly (no floating point); more decimals than the currency has are refused. */
function smallestUnits(text: string, decimals: number): number {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) throw new Error('Type the amount as digits, with a decimal point if needed (12.34).');
  const [, whole = '', fraction = ''] = match;
  if (fraction.length > decimals) throw new Error(`The amount has more than ${decimals} decimals.`);
  const units = Number(whole + fraction.padEnd(decimals, '0'));
  if (!Number.isSafeInteger(units) || units < 1) throw new Error('The amount must be more than zero.');
  return units;
}

/** Shows `quote` with an Execute button and a countdown to its expiry; returns the countdown's interval. */
function showQuote(token: Token, area: HTMLElement, problem: HTMLElement, quote: Quote): ReturnType<typeof setInterval> {
  const { sendingCurrency: sending, receivingCurrency: receiving } = quote;
  const timeLeft = h('dd', {});
  const execute = h('button', { type: 'button' }, 'Execute quote');
  const result = h('p', { role: 'status' });
  const tick = (): void => {
    const seconds = Math.max(0, Math.ceil((Date.parse(quote.expiresAt) - Date.now()) / 1000));
    show(timeLeft, seconds === 0 ? 'expired' : `${seconds} s`);
    if (seconds === 0) execute.disabled = true;
  };
  tick();
  const countdown = setInterval(tick, COUNTDOWN_TICK_MS);
  execute.addEventListener('click', () => {
    execute.disabled = true;
    clearInterval(countdown);
    show(problem);
    executeQuote(token, quote.id).then(
      (transaction) => show(result, `Quote ${quote.id} executed: transaction ${transaction.id} is ${transaction.status}.`),
      (err: unknown) => show(problem, describe(err)),
    );
  });
  show(
    area,
    h('h3', {}, `Quote ${quote.id}`),
    h(
      'dl',
      { 'aria-label': 'Quote details' },
      h('dt', {}, 'You send'),
      h('dd', {}, money(quote.totalSendingAmount, sending.decimals, sending.code)),
      h('dt', {}, 'They receive'),
      h('dd', {}, money(quote.totalReceivingAmount, receiving.decimals, receiving.code)),
      h('dt', {}, 'Exchange rate'),
      h('dd', {}, `${quote.exchangeRate} ${sending.code} per ${receiving.code}`),
      h('dt', {}, 'Fees included'),
      h('dd', {}, money(quote.feesIncluded, sending.decimals, sending.code)),
      h('dt', {}, 'Expires in'),
      timeLeft,
    ),
    execute,
    result,
  );
  return countdown;
}

/** Executes the quote and reads the transaction it made, as the service has it now. */
async function executeQuote(token: Token, quoteId: string): Promise<Transaction> {
  const executed = await call<Quote>(token, 'POST', `/quotes/${encodeURIComponent(quoteId)}/execute`);
  if (executed.transactionId === undefined) throw new Error(`Quote ${quoteId} is ${executed.status} and made no transaction.`);
  return call<Transaction>(token, 'GET', `/transactions/${encodeURIComponent(executed.transactionId)}`);
}
