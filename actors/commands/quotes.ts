// Quote commands (CONTRACT.md "Money", docs/payments.md): create a quote (optionally
// executing it at once) and execute one (from an EMBEDDED_WALLET: with a stamp over the
// quote's payloadToSign, checked inside the decision). Their actors are the parties'
// (actors/commands/quote-parties.ts).
//
// The environment comes with the input as the request authenticated against it, not
// read from the world: its configuration is read, not held. It is one immutable record,
// and holding the environment would order every quote of it behind every other, a
// wallet's signature check included; a quote priced against the bounds in force when the
// request arrived is ordered before any later PATCH /config.
import type { Decision, EngineEvent } from '../../src/engine/state-machine.js';
import { notFound } from '../errors.js';
import { decideExecuteQuote, executionEvents } from '../payment.js';
import type { PlatformEnv } from '../platform.js';
import { cancelExpiry, decideCreateQuote, expiryTimer, type Quote } from '../quote.js';
import type { DomainCommand, DomainEvent, TimerMessage, World } from '../world.js';
import { actorsOf, partiesOfQuote, partiesOfRequest, type QuoteRequest } from './quote-parties.js';

/** The quote `id` of environment `envId`; a 404 names `field`, where the request gave the id. */
export function quoteIn(world: World, envId: string, id: string, field = 'quoteId'): Quote {
  const quote = world.quotes.inEnv(envId, id);
  if (quote === undefined) throw notFound(field, 'quote', id);
  return quote;
}

/**
 * Naming a new quote's actors decides nothing: the lookup an UMA address is paid through
 * is checked for expiry when the quote is decided, at its time, not here.
 */
const BEFORE_ANY_EXPIRY = Number.NEGATIVE_INFINITY;

export const createQuote: DomainCommand<{ env: PlatformEnv; request: QuoteRequest }, Quote> = {
  name: 'quote.create',
  actors: ({ env, request }, world) => {
    const { parties, alsoRead } = partiesOfRequest(world, env, request, BEFORE_ANY_EXPIRY);
    return actorsOf(world, parties, alsoRead);
  },
  decide: ({ env, request }, world, at) => {
    const { parties, lookupUsed } = partiesOfRequest(world, env, request, at);
    const quote = decideCreateQuote(parties, request, at);
    const events: Array<DomainEvent | EngineEvent<TimerMessage>> = [{ type: 'quote.created', quote }];
    if (lookupUsed !== undefined) events.push({ ...lookupUsed, quoteId: quote.id });
    if (request.immediatelyExecute === true) events.push(...executionEvents(decideExecuteQuote(quote, parties, world, at), at));
    else events.push(expiryTimer(quote, at));
    return { events, reply: () => world.quotes.get(quote.id)! };
  },
};

/**
 * Checks a `Service-Wallet-Signature` stamp over `payload` by a live session of the
 * embedded wallet `accountId` at `at` (SERVICE_SPEC 5.6); rejects with the 401 when it is
 * not. Called inside the decision that holds the source account, which is the wallet's
 * actor, so no session revocation or expiry lands between the check and the payment.
 */
export type StampCheck = (accountId: string, payload: string, at: number) => Promise<unknown>;

export const executeQuote: DomainCommand<{ env: PlatformEnv; quoteId: string; checkStamp: StampCheck }, Quote> = {
  name: 'quote.execute',
  actors: ({ env, quoteId }, world) => actorsOf(world, partiesOfQuote(world, env, quoteIn(world, env.id, quoteId))),
  decide: ({ env, quoteId, checkStamp }, world, at) => {
    const quote = quoteIn(world, env.id, quoteId);
    const parties = partiesOfQuote(world, env, quote);
    // The quote and parties are the held actors' own state: nothing else changes them. The
    // environment's intake, which the execute checks, other actors' decisions change too:
    // so it is checked synchronously, or after the stamp in the last step (LastStep).
    const execute = (): Decision<DomainEvent, Quote> => ({
      events: [cancelExpiry(quote), ...executionEvents(decideExecuteQuote(quote, parties, world, at), at)],
      reply: () => world.quotes.get(quoteId)!,
    });
    const source = parties.source;
    if (source.kind !== 'INTERNAL' || source.account.type !== 'EMBEDDED_WALLET') return execute();
    if (quote.payloadToSign === undefined) throw new Error(`quote ${quote.id} from EMBEDDED_WALLET ${quote.sourceAccountId} has no payloadToSign`);
    return checkStamp(quote.sourceAccountId, quote.payloadToSign, at).then(() => execute);
  },
};
