// The simulation's workload: API operations drawn by weight, most of them moving money
// (funding, quotes and their execution, transfers, payouts to every sandbox outcome,
// incoming UMA payments and their approval), with invalid input among them, configuration
// changes and webhook redelivery. Each operation is a request as data and what its answer
// teaches the model; money operations carry an Idempotency-Key, so one the crash left
// unanswered is sent again after recovery and must apply once.
import { IDEMPOTENCY_TTL_MS } from '../engine/engine.js';
import { Weights, type Rng } from './random.js';
import type { MoneyModel, MoveKind } from './model.js';
import { WalletWorkload } from './wallets.js';
import type { Json, Operation, SimRequest } from './operation.js';

interface Customer {
  id: string;
  umaAddress: string;
  /** Internal accounts by currency, once listed. */
  accounts: Map<string, string>;
  externals: Array<{ id: string; currency: string; suffix: string }>;
}

interface OpenQuote {
  id: string;
  kind: MoveKind;
  source: string;
  destination: string | undefined;
  total: number;
  received: number;
  key: string;
  /** From an embedded wallet: what its execution must carry a session's stamp over. */
  payloadToSign?: string;
}

/** Caps that keep a run's population, and so each check, bounded. */
const MAX_CUSTOMERS = 12;
const MAX_EXTERNALS_PER_CUSTOMER = 4;
const MAX_OPEN_QUOTES = 24;
/**
 * How long after its execution a quote is executed again with its key: within the service's
 * idempotency window (less an hour for the time a request spends crossing crashes), so the
 * answer must be the first one again.
 */
const RETRY_WITHIN_MS = IDEMPOTENCY_TTL_MS - 60 * 60 * 1000;

/** Sandbox suffixes of an external account's number: 000 settles at once, 002-007 take the sandbox's paths. */
const SUFFIXES = ['000', '002', '003', '004', '005', '006', '007'] as const;

const OPERATION_WEIGHTS = {
  createCustomer: 4,
  invalidCustomer: 1,
  listAccounts: 1,
  fund: 12,
  invalidFund: 1,
  createExternal: 4,
  quote: 10,
  execute: 10,
  retryExecute: 2,
  transferOut: 6,
  transferIn: 4,
  receive: 6,
  settleIncoming: 3,
  configEndpoint: 1,
  redeliver: 1,
  readTransactions: 2,
  wrongAuth: 1,
  malformed: 1,
  notFound: 1,
  wallet: 8,
} as const;
type OpName = keyof typeof OPERATION_WEIGHTS;
const WEIGHTS = new Weights<OpName>(OPERATION_WEIGHTS);

export class Workload {
  readonly #rng: Rng;
  readonly #model: MoneyModel;
  readonly #now: () => number;
  readonly #customers: Customer[] = [];
  readonly #quotes: OpenQuote[] = [];
  /** Executed quotes (oldest first) and when, for retries with their key while the service still remembers it. */
  readonly #executed: Array<{ quote: OpenQuote; at: number }> = [];
  /** Incoming payments waiting for the platform's approve or reject. */
  readonly #awaiting: string[] = [];
  /** Operations that must come next (listing a new customer's accounts). */
  readonly #next: Array<Operation | (() => Operation)> = [];
  #keys = 0;
  readonly wallets: WalletWorkload;

  /** The share of quotes not from a wallet created with `immediatelyExecute` (SimulationOptions.immediateShare). */
  readonly #immediateShare: number;

  constructor(rng: Rng, model: MoneyModel, now: () => number, immediateShare: number) {
    this.#rng = rng;
    this.#model = model;
    this.#now = now;
    this.#immediateShare = immediateShare;
    this.wallets = new WalletWorkload(rng, now, (op) => this.#next.push(op));
    // The platform configures its webhook endpoint first, as an integrator would.
    this.#next.push(this.#configEndpoint(true));
  }

  /** An incoming payment whose approval webhook was answered 202: the platform decides later. */
  awaitApproval(transactionId: string): void {
    this.#awaiting.push(transactionId);
  }

  /** The next operation: a follow-up if one is due, else one drawn by weight among those possible now. */
  next(): Operation {
    const due = this.#next.shift();
    if (due !== undefined) return typeof due === 'function' ? due() : due;
    for (;;) {
      const op = this.#draw(this.#rng.weighted(WEIGHTS));
      if (op !== undefined) return op;
    }
  }

  #key(): string {
    return `sim-${++this.#keys}`;
  }

  #draw(name: OpName): Operation | undefined {
    switch (name) {
      case 'createCustomer':
        return this.#customers.length < MAX_CUSTOMERS ? this.#createCustomer() : undefined;
      case 'invalidCustomer':
        return refused('invalid customer', { method: 'POST', path: '/customers', body: { customerType: this.#rng.pick(['PERSON', 7, null]) }, auth: 'sandbox' });
      case 'listAccounts':
        return this.#withCustomer((c) => this.#listAccounts(c));
      case 'fund':
        return this.#withAccount((c, currency, account) => this.#fund(c, currency, account));
      case 'invalidFund':
        return this.#withAccount((_c, _currency, account) =>
          refused('invalid funding', { method: 'POST', path: `/sandbox/internal-accounts/${account}/fund`, body: { amount: this.#rng.pick([0, -5, 1.5, '10']) }, auth: 'sandbox' }),
        );
      case 'createExternal':
        return this.#withCustomer((c) => (c.externals.length < MAX_EXTERNALS_PER_CUSTOMER ? this.#createExternal(c) : undefined));
      case 'quote':
        return this.#quotes.length < MAX_OPEN_QUOTES ? this.#quote() : undefined;
      case 'execute': {
        if (this.#quotes.length === 0) return undefined;
        const at = this.#rng.int(this.#quotes.length);
        const quote = this.#quotes[at]!;
        if (quote.payloadToSign !== undefined) {
          const wallet = this.wallets.wallets.get(quote.source)!;
          // A wallet's requests go one at a time: its quote waits while it is busy. Mostly the
          // client also waits for a session to sign with; sometimes it signs with a key that is none.
          if (wallet.busy || (this.wallets.liveSessionKey(wallet) === undefined && this.#rng.chance(0.8))) return undefined;
        }
        return this.#execute(this.#quotes.splice(at, 1)[0]!, false);
      }
      case 'retryExecute': {
        const forgotten = this.#executed.findIndex((e) => e.at > this.#now() - RETRY_WITHIN_MS);
        this.#executed.splice(0, forgotten === -1 ? this.#executed.length : forgotten);
        if (this.#executed.length === 0) return undefined;
        const { quote } = this.#rng.pick(this.#executed);
        return quote.payloadToSign !== undefined && this.wallets.busy(quote.source) ? undefined : this.#execute(quote, true);
      }
      case 'transferOut':
        return this.#transfer('transfer-out');
      case 'transferIn':
        return this.#transfer('transfer-in');
      case 'receive':
        return this.#withCustomer((c) => this.#receive(c));
      case 'settleIncoming':
        return this.#awaiting.length > 0 ? this.#settleIncoming(this.#awaiting.splice(this.#rng.int(this.#awaiting.length), 1)[0]!) : undefined;
      case 'configEndpoint':
        return this.#configEndpoint();
      case 'redeliver':
        return this.#redeliver();
      case 'readTransactions':
        return { label: 'list transactions', request: { method: 'GET', path: '/transactions', query: 'limit=20', auth: 'sandbox' }, retry: false, answered: () => undefined };
      case 'wrongAuth':
        return refused('wrong credentials', { method: 'GET', path: '/customers', auth: 'wrong' });
      case 'malformed':
        return refused('malformed JSON', { method: 'POST', path: '/quotes', raw: '{"source": ', auth: 'sandbox' });
      case 'notFound':
        return refused('unknown transaction', { method: 'GET', path: '/transactions/Transaction:00000000-0000-7000-8000-000000000000', auth: 'sandbox' });
      case 'wallet':
        return this.wallets.draw();
    }
  }

  #withCustomer(make: (c: Customer) => Operation | undefined): Operation | undefined {
    if (this.#customers.length === 0) return undefined;
    return make(this.#rng.pick(this.#customers));
  }

  #withAccount(make: (c: Customer, currency: string, account: string) => Operation | undefined): Operation | undefined {
    const listed = this.#customers.filter((c) => c.accounts.size > 0);
    if (listed.length === 0) return undefined;
    const customer = this.#rng.pick(listed);
    const currency = this.#rng.chance(0.8) && customer.accounts.has('USD') ? 'USD' : this.#rng.pick([...customer.accounts.keys()]);
    return make(customer, currency, customer.accounts.get(currency)!);
  }

  #createCustomer(): Operation {
    const n = this.#customers.length + 1;
    return {
      label: 'create customer',
      request: { method: 'POST', path: '/customers', body: { customerType: 'INDIVIDUAL', platformCustomerId: `sim-${n}-${this.#rng.int(1_000_000)}` }, auth: 'sandbox' },
      retry: false,
      answered: (status, body) => {
        if (status !== 201) return `creating a customer answered ${status}`;
        const customer: Customer = { id: body.str('id'), umaAddress: body.str('umaAddress'), accounts: new Map(), externals: [] };
        this.#customers.push(customer);
        this.#next.push(this.#listAccounts(customer));
        return undefined;
      },
    };
  }

  #listAccounts(customer: Customer): Operation {
    return {
      label: 'list customer accounts',
      request: { method: 'GET', path: '/customers/internal-accounts', query: `customerId=${encodeURIComponent(customer.id)}&limit=100`, auth: 'sandbox' },
      retry: false,
      answered: (status, body) => {
        if (status !== 200) return `listing a customer's accounts answered ${status}`;
        for (const account of body.list('data')) {
          const currency = account.at('balance').at('currency').str('code');
          customer.accounts.set(currency, account.str('id'));
          this.#model.addAccount({ id: account.str('id'), currency });
          if (account.str('type') === 'EMBEDDED_WALLET') this.wallets.addWallet(account.str('id'), `${customer.id.slice(-12)}@example.com`);
        }
        return undefined;
      },
    };
  }

  #fund(_customer: Customer, _currency: string, account: string): Operation {
    const amount = this.#rng.between(1, 200_000);
    return {
      label: 'fund',
      request: { method: 'POST', path: `/sandbox/internal-accounts/${account}/fund`, body: { amount }, auth: 'sandbox', headers: { 'idempotency-key': this.#key() } },
      retry: true,
      answered: (status) => {
        if (status !== 200) return `funding ${amount} answered ${status}`;
        this.#model.funded(account, amount);
        return undefined;
      },
    };
  }

  #createExternal(customer: Customer): Operation {
    const suffix = this.#rng.pick(SUFFIXES);
    const accountInfo = {
      accountType: 'USD_ACCOUNT',
      accountNumber: `${this.#rng.between(100_000, 999_999)}${suffix}`,
      routingNumber: '021000021',
      bankAccountType: 'CHECKING',
      beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' },
    };
    return {
      label: `create external account ${suffix}`,
      request: { method: 'POST', path: '/customers/external-accounts', body: { currency: 'USD', accountInfo, customerId: customer.id }, auth: 'sandbox' },
      retry: false,
      answered: (status, body) => {
        if (status !== 201) return `creating an external account answered ${status}`;
        customer.externals.push({ id: body.str('id'), currency: 'USD', suffix });
        return undefined;
      },
    };
  }

  /** A quote from a USD account to an external account (a payout) or to another customer's account. */
  #quote(): Operation | undefined {
    const payers = this.#customers.filter((c) => c.accounts.has('USD'));
    if (payers.length === 0) return undefined;
    const payer = this.#rng.pick(payers);
    const wallet = payer.accounts.get('USDB');
    const fromWallet = wallet !== undefined && this.wallets.wallets.has(wallet) && this.#rng.chance(0.3);
    const source = fromWallet ? wallet : payer.accounts.get('USD')!;
    const externals = this.#customers.flatMap((c) => c.externals);
    const toExternal = externals.length > 0 && this.#rng.chance(0.6);
    let destination: string;
    let internalDestination: string | undefined;
    if (toExternal) {
      destination = this.#rng.pick(externals).id;
    } else {
      const payee = this.#rng.pick(this.#customers.filter((c) => c !== payer && c.accounts.size > 0).concat(payer));
      const currency = this.#rng.pick([...payee.accounts.keys()]);
      destination = payee.accounts.get(currency)!;
      if (destination === source) return undefined;
      internalDestination = destination;
    }
    const amount = this.#rng.between(100, 150_000);
    const key = this.#key();
    // A wallet's quote needs a signed execute; any other may be executed as it is made.
    const immediately = !fromWallet && this.#immediateShare > 0 && this.#rng.chance(this.#immediateShare);
    const body: Record<string, unknown> = { source: { sourceType: 'ACCOUNT', accountId: source }, destination: { destinationType: 'ACCOUNT', accountId: destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount };
    if (immediately) body.immediatelyExecute = true;
    const kind = toExternal ? 'payout' : 'internal';
    return {
      label: `${toExternal ? 'quote a payout' : 'quote an internal payment'}${fromWallet ? ' from a wallet' : ''}${immediately ? ', executed at once' : ''}`,
      request: { method: 'POST', path: '/quotes', body, auth: 'sandbox', headers: { 'idempotency-key': key } },
      retry: true,
      answered: (status, body) => {
        // An amount the fees eat, or out of the platform's bounds, is refused with the field named;
        // executed at once, also a balance short of it: nothing moved.
        if (status === 400) return undefined;
        if (status !== 201) return `creating a quote answered ${status}`;
        if (immediately) return this.#recordExecution(body, { id: body.str('id'), kind, source, destination: internalDestination, total: body.num('totalSendingAmount'), received: body.num('totalReceivingAmount') });
        if (this.#quotes.some((q) => q.id === body.str('id'))) return undefined;
        this.#quotes.push({
          id: body.str('id'),
          kind,
          source,
          destination: internalDestination,
          total: body.num('totalSendingAmount'),
          received: body.num('totalReceivingAmount'),
          key: this.#key(),
          ...(fromWallet ? { payloadToSign: body.list('paymentInstructions')[0]!.at('accountOrWalletInfo').str('payloadToSign') } : {}),
        });
        return undefined;
      },
    };
  }

  #execute(quote: OpenQuote, again: boolean): Operation {
    const headers: Record<string, string> = { 'idempotency-key': quote.key };
    const wallet = quote.payloadToSign === undefined ? undefined : this.wallets.wallets.get(quote.source)!;
    // From a wallet: stamped by one of its sessions (or, when it has none live, by a key that is no session's: refused).
    const stamp = wallet === undefined ? undefined : this.wallets.stamp(wallet, quote.payloadToSign!);
    if (stamp !== undefined) headers['service-wallet-signature'] = stamp.header;
    const op: Operation = {
      label: `${again ? 'execute a quote again' : 'execute a quote'}${stamp === undefined ? '' : stamp.valid ? ', stamped' : ', stamped by no session'}`,
      request: { method: 'POST', path: `/quotes/${quote.id}/execute`, auth: 'sandbox', headers },
      retry: true,
      answered: (status, body) => {
        if (stamp?.valid === false && !again) {
          if (status !== 401) return `executing a wallet's quote with a stamp by no session answered ${status}`;
          this.#quotes.push(quote);
          return undefined;
        }
        // Not enough balance (the quote stays PENDING) or expired: nothing moved.
        if (status === 400 && (body.text('code') === 'INSUFFICIENT_BALANCE' || body.text('code') === 'QUOTE_EXPIRED')) return undefined;
        if (status !== 200) return `executing a quote answered ${status} ${String(body.text('code'))}`;
        if (!again && body.text('transactionId') !== undefined) this.#executed.push({ quote, at: this.#now() });
        return this.#recordExecution(body, quote);
      },
    };
    return wallet === undefined ? op : this.wallets.walletOp(wallet, op);
  }

  /** The transaction of `quote`, which `body` (the quote as its execution answered it) says was executed, told to the model. */
  #recordExecution(body: Json, quote: Pick<OpenQuote, 'id' | 'kind' | 'source' | 'destination' | 'total' | 'received'>): string | undefined {
    const transactionId = body.text('transactionId');
    if (transactionId === undefined) return `an executed quote names no transaction (status ${body.text('status')})`;
    const failed = body.str('status') === 'FAILED';
    return this.#model.recordTransaction({
      id: transactionId,
      kind: quote.kind,
      source: quote.source,
      debit: quote.total,
      destination: quote.destination,
      credit: quote.received,
      failedAtExecute: failed,
      quoteId: quote.id,
      status: quote.kind === 'internal' ? 'COMPLETED' : failed ? 'FAILED' : 'PROCESSING',
    });
  }

  #transfer(kind: 'transfer-out' | 'transfer-in'): Operation | undefined {
    const owners = this.#customers.filter((c) => c.accounts.has('USD') && c.externals.length > 0);
    if (owners.length === 0) return undefined;
    const owner = this.#rng.pick(owners);
    const internal = owner.accounts.get('USD')!;
    const external = this.#rng.pick(owner.externals);
    const amount = this.#rng.between(1, 100_000);
    const body =
      kind === 'transfer-out'
        ? { source: { accountId: internal }, destination: { accountId: external.id }, amount }
        : { source: { accountId: external.id }, destination: { accountId: internal }, amount };
    return {
      label: `${kind} ${external.suffix}`,
      request: { method: 'POST', path: `/${kind}`, body, auth: 'sandbox', headers: { 'idempotency-key': this.#key() } },
      retry: true,
      answered: (status, answer) => {
        // The sandbox's refusals (002, 003) and a balance short of the amount move nothing.
        if (status === 400 && ['INSUFFICIENT_FUNDS', 'ACCOUNT_CLOSED', 'INSUFFICIENT_BALANCE'].includes(answer.text('code') ?? '')) return undefined;
        if (status !== 201) return `${kind} answered ${status} ${String(answer.text('code'))}`;
        return this.#model.recordTransaction({
          id: answer.str('id'),
          kind,
          source: kind === 'transfer-out' ? internal : undefined,
          debit: kind === 'transfer-out' ? amount : 0,
          destination: kind === 'transfer-in' ? internal : undefined,
          credit: kind === 'transfer-in' ? amount : 0,
          failedAtExecute: false,
          quoteId: '',
          status: answer.str('status'),
        });
      },
    };
  }

  #receive(customer: Customer): Operation | undefined {
    const account = customer.accounts.get('USD');
    if (account === undefined) return undefined;
    const amount = this.#rng.between(1, 100_000);
    return {
      label: 'receive an UMA payment',
      request: {
        method: 'POST',
        path: '/sandbox/uma/receive',
        body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: amount, customerId: customer.id },
        auth: 'sandbox',
        headers: { 'idempotency-key': this.#key() },
      },
      retry: true,
      answered: (status, body) => {
        // The environment's intake bound refuses what would pass it.
        if (status === 400) return undefined;
        if (status !== 201) return `receiving an UMA payment answered ${status} ${String(body.text('code'))}`;
        const credited = body.at('destination').text('accountId') === account ? account : undefined;
        return this.#model.recordTransaction({ id: body.str('id'), kind: 'incoming', source: undefined, debit: 0, destination: credited, credit: amount, failedAtExecute: false, quoteId: '', status: body.str('status') });
      },
    };
  }

  #settleIncoming(transactionId: string): Operation {
    const approve = this.#rng.chance(0.7);
    return {
      label: approve ? 'approve an incoming payment' : 'reject an incoming payment',
      request: { method: 'POST', path: `/transactions/${transactionId}/${approve ? 'approve' : 'reject'}`, body: {}, auth: 'sandbox', headers: { 'idempotency-key': this.#key() } },
      retry: true,
      answered: (status, body) => {
        // The approval window may have closed first (it fails the payment): 409.
        if (status === 409 && body.text('code') === 'TRANSACTION_NOT_PENDING') return undefined;
        if (status !== 200) return `settling an incoming payment answered ${status} ${String(body.text('code'))}`;
        return this.#model.observe(transactionId, body.str('status'));
      },
    };
  }

  #configEndpoint(set = this.#rng.chance(0.8)): Operation {
    const endpoint = set ? 'http://platform.simulated/webhooks' : '';
    return {
      label: endpoint === '' ? 'clear the webhook endpoint' : 'set the webhook endpoint',
      request: { method: 'PATCH', path: '/config', body: { webhookEndpoint: endpoint }, auth: 'sandbox' },
      retry: true,
      answered: (status, body) => (status === 200 ? undefined : `PATCH /config answered ${status} ${String(body.text('code'))}`),
    };
  }

  #redeliver(): Operation | undefined {
    const transactions = [...this.#model.transactions.keys()];
    if (transactions.length === 0) return undefined;
    return {
      label: 'list webhook events',
      request: { method: 'GET', path: '/webhooks/events', query: 'limit=5', auth: 'sandbox' },
      retry: false,
      answered: (status, body) => {
        if (status !== 200) return `listing webhook events answered ${status}`;
        const event = body.list('data')[0];
        if (event !== undefined && this.#rng.chance(0.5)) {
          this.#next.push({
            label: 'redeliver a webhook event',
            request: { method: 'POST', path: `/webhooks/events/${event.str('id')}/redeliver`, auth: 'sandbox' },
            retry: false,
            answered: (redelivered) => (redelivered === 200 || redelivered === 202 || redelivered === 409 ? undefined : `redelivering a webhook event answered ${redelivered}`),
          });
        }
        return undefined;
      },
    };
  }
}

function refused(label: string, request: SimRequest): Operation {
  return { label, request, retry: false, refused: true, answered: () => undefined };
}
