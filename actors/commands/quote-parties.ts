// Who pays and who is paid (CONTRACT.md "Money", docs/payments.md): a quote's parties as
// the world has them, and the actors a decision about them holds. That is the quote's
// owner (its source account, the pulling customer, or a funding quote's customer or
// environment), both parties' customers (whose deletion stops new payments), and the
// payee's account: an internal one is read for its currency and owner and is credited when
// the quote executes; a bank account is its owner's record (the environment's for the
// platform's own). The environment record comes from the request: its configuration is
// read, not held (see actors/commands/quotes.ts).
import type { Customer } from '../customer.js';
import { invalidField, notFound } from '../errors.js';
import { assertNotDeleted } from '../external-account.js';
import { decideUseLookup, type LookupUsed } from '../lookup.js';
import type { PlatformEnv } from '../platform.js';
import { ownerOf, type Payee, type Payer, type Quote, type QuoteInput, type QuoteParties } from '../quote.js';
import type { World } from '../world.js';
import { receivingAccount, receivingActors } from './receiving-account.js';

/** A quote as the request asks for it: the quote's input, with its source and destination by id. */
export interface QuoteRequest extends QuoteInput {
  source: { sourceType?: 'ACCOUNT' | 'REALTIME_FUNDING'; accountId?: string; currency?: string; customerId?: string };
  destination: QuoteInput['destination'] & { destinationType: 'ACCOUNT' | 'UMA_ADDRESS'; accountId?: string };
}

/** The parties a new quote names, resolved, and what resolving them took. */
export interface RequestedParties {
  parties: QuoteParties;
  /** The lookup an UMA address is paid through, used up by the quote (its quoteId set once the quote has one). */
  lookupUsed?: LookupUsed;
  /** Actors whose records finding the payee read besides the parties' own (an UMA address: the lookup's environment, the receiver's accounts). */
  alsoRead: readonly string[];
}

const NOTHING_ELSE: readonly string[] = [];

/** Bank accounts the service can debit through the bank (direct pull): a customer's US account in USD. */
const PULL_ACCOUNT_TYPES: ReadonlySet<string> = new Set(['USD_ACCOUNT', 'US_ACCOUNT']);

/** The quote's source: an internal account of this environment, or a customer's US bank account (direct pull). */
function sourceOf(world: World, env: PlatformEnv, id: string): Payer {
  const external = world.externalAccounts.get(id);
  if (external !== undefined && external.envId === env.id) {
    assertNotDeleted(external, 'source.accountId');
    if (external.customerId === null || !PULL_ACCOUNT_TYPES.has(external.accountInfo.accountType) || external.currency !== 'USD') {
      throw invalidField('source.accountId', "a direct pull takes a customer's US bank account (USD_ACCOUNT or US_ACCOUNT) in USD");
    }
    return { kind: 'PULL', account: external, customerId: external.customerId };
  }
  const account = world.internalAccounts.inEnv(env.id, id);
  if (account === undefined) throw notFound('source.accountId', 'account', id);
  return { kind: 'INTERNAL', account };
}

function payeeOf(world: World, env: PlatformEnv, id: string): Payee {
  const internal = world.internalAccounts.inEnv(env.id, id);
  if (internal !== undefined) return { kind: 'INTERNAL', account: internal, customer: partyCustomer(world, internal.customerId) };
  const external = world.externalAccounts.get(id);
  if (external !== undefined && external.envId === env.id) {
    assertNotDeleted(external, 'destination.accountId');
    return { kind: 'EXTERNAL', account: external, customer: partyCustomer(world, external.customerId ?? '') };
  }
  throw notFound('destination.accountId', 'account', id);
}

/** The customer of a party; '' (the platform's own account) is none. */
function partyCustomer(world: World, id: string): Customer | undefined {
  return id === '' ? undefined : world.customers.get(id);
}

/**
 * The payer a quote request names: `{sourceType: ACCOUNT, accountId}` (sourceType may be
 * omitted), or money sent from outside: `{sourceType: REALTIME_FUNDING, currency,
 * customerId?}` or the spec's `{customerId, currency}`. A funding quote of a customer
 * belongs to the customer's actor, the platform's to the environment's.
 */
function payerOfRequest(world: World, env: PlatformEnv, source: QuoteRequest['source']): Payer {
  const funding = source.sourceType === 'REALTIME_FUNDING' || (source.sourceType === undefined && source.accountId === undefined);
  if (!funding) {
    if (source.accountId === undefined) throw invalidField('source.accountId', 'is required for an ACCOUNT source');
    if (source.currency !== undefined) throw invalidField('source.currency', 'an ACCOUNT source pays in its account currency');
    if (source.customerId !== undefined) throw invalidField('source.customerId', 'an ACCOUNT source names its account only');
    return sourceOf(world, env, source.accountId);
  }
  if (source.accountId !== undefined) throw invalidField('source.accountId', 'a REALTIME_FUNDING source names no account');
  if (source.currency === undefined) throw invalidField('source.currency', 'is required for a REALTIME_FUNDING source');
  if (source.sourceType === undefined && source.customerId === undefined) throw invalidField('source.customerId', 'a source without sourceType is {customerId, currency}');
  if (source.customerId === undefined) return { kind: 'FUNDING', currency: source.currency, customerId: '', ownerId: env.id };
  if (world.customers.inEnv(env.id, source.customerId) === undefined) throw notFound('source.customerId', 'customer', source.customerId);
  return { kind: 'FUNDING', currency: source.currency, customerId: source.customerId, ownerId: source.customerId };
}

function partiesOf(world: World, env: PlatformEnv, source: Payer, payee: Payee): QuoteParties {
  const customerId = source.kind === 'INTERNAL' ? source.account.customerId : source.customerId;
  return { env, source, sourceCustomer: partyCustomer(world, customerId), payee };
}

/**
 * The parties of a new quote, at `at` (a lookup used after its expiry is refused). An UMA
 * address is paid through its receiver lookup, which the quote uses up (the lookup is the
 * environment actor's record): a local customer is paid into its internal account of the
 * chosen currency, a sandbox test address as it scripts.
 */
export function partiesOfRequest(world: World, env: PlatformEnv, request: QuoteRequest, at: number): RequestedParties {
  const source = payerOfRequest(world, env, request.source);
  const d = request.destination;
  if (d.destinationType === 'ACCOUNT') {
    if (d.umaAddress !== undefined) throw invalidField('destination.umaAddress', 'only an UMA_ADDRESS destination takes an umaAddress');
    if (d.accountId === undefined) throw invalidField('destination.accountId', 'is required for an ACCOUNT destination');
    return { parties: partiesOf(world, env, source, payeeOf(world, env, d.accountId)), alsoRead: NOTHING_ELSE };
  }
  if (d.accountId !== undefined) throw invalidField('destination.accountId', 'an UMA_ADDRESS destination names no account');
  if (d.umaAddress === undefined) throw invalidField('destination.umaAddress', 'is required for an UMA_ADDRESS destination');
  if (request.lookupId === undefined) throw invalidField('lookupId', 'is required for an UMA_ADDRESS destination: look the receiver up first (GET /receiver/uma/{address})');
  const used = decideUseLookup(
    world.lookups.inEnv(env.id, request.lookupId),
    {
      lookupId: request.lookupId,
      umaAddress: d.umaAddress,
      ...(d.currency !== undefined ? { currency: d.currency } : {}),
      ...(request.senderCustomerInfo !== undefined ? { senderCustomerInfo: request.senderCustomerInfo } : {}),
      // The quote's id is only known once it is decided; the command sets it on the event.
      quoteId: '',
    },
    at,
  );
  const currency = used.currency.currency;
  const receiver = used.receiver;
  if (receiver.kind === 'SANDBOX_TEST_ADDRESS') {
    const payee: Payee = { kind: 'UMA_TEST', umaAddress: receiver.umaAddress, currency, behaviour: receiver.behaviour, customer: undefined };
    return { parties: partiesOf(world, env, source, payee), lookupUsed: used.event, alsoRead: [env.id] };
  }
  if (receiver.kind !== 'CUSTOMER') throw invalidField('destination.umaAddress', 'the lookup is not for an UMA address');
  const account = receivingAccount(world, receiver.customerId, currency);
  if (account === undefined) throw invalidField('destination.currency', `${receiver.umaAddress} holds no ${currency} account`);
  const payee: Payee = { kind: 'INTERNAL', account, customer: partyCustomer(world, receiver.customerId) };
  return { parties: partiesOf(world, env, source, payee), lookupUsed: used.event, alsoRead: [env.id, ...receivingActors(world, receiver.customerId)] };
}

/** The parties of an existing quote. */
export function partiesOfQuote(world: World, env: PlatformEnv, quote: Quote): QuoteParties {
  const source: Payer =
    quote.fundingReference !== undefined
      ? { kind: 'FUNDING', currency: quote.price.sendingCurrency, customerId: quote.sourceCustomerId, ownerId: quote.ownerId }
      : sourceOf(world, env, quote.sourceAccountId);
  const payee: Payee =
    quote.umaTestBehaviour !== undefined && quote.destination.destinationType === 'UMA_ADDRESS'
      ? { kind: 'UMA_TEST', umaAddress: quote.destination.umaAddress, currency: quote.price.receivingCurrency, behaviour: quote.umaTestBehaviour, customer: undefined }
      : payeeOf(world, env, quote.payeeAccountId!);
  return partiesOf(world, env, source, payee);
}

/** Every actor a decision about these parties reads or writes, each once, then any of `alsoRead` not among them. */
export function actorsOf(world: World, parties: QuoteParties, alsoRead: readonly string[] = []): string[] {
  const actors = [ownerOf(parties.source)];
  if (parties.sourceCustomer !== undefined) pushOnce(actors, parties.sourceCustomer.id);
  const payee = parties.payee;
  if (payee.customer !== undefined) pushOnce(actors, payee.customer.id);
  if (payee.kind === 'INTERNAL') pushOnce(actors, payee.account.id);
  else if (payee.kind === 'EXTERNAL') pushOnce(actors, world.externalAccounts.actorOf(payee.account));
  for (const id of alsoRead) pushOnce(actors, id);
  return actors;
}

function pushOnce(actors: string[], id: string): void {
  if (!actors.includes(id)) actors.push(id);
}
