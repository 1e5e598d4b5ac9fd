// Quote commands (CONTRACT.md "Money", docs/payments.md): create a quote (optionally
// executing it at once) and execute one (from an EMBEDDED_WALLET: with a stamp over the
// quote's payloadToSign, verified before the decision, whose session the decision checks).
// Their actors are the parties' (actors/commands/quote-parties.ts).
//
// The environment comes with the input as the request authenticated against it, not
// read from the world: its configuration is read, not held. It is one immutable record,
// and holding the environment would order every quote of it behind every other; a quote priced against the bounds in force when the
// request arrived is ordered before any later PATCH /config.
import { preparedFact, type EngineEvent } from '../../src/engine/state-machine.js';
import { executionTransactionIdOf } from '../derived-ids.js';
import { notFound } from '../errors.js';
import { decideExecuteQuote, executionEvents } from '../payment.js';
import type { PlatformEnv } from '../platform.js';
import { cancelExpiry, decideCreateQuote, expiryTimer, type Quote, type QuoteParties } from '../quote.js';
import type { DomainCommand, DomainEvent, TimerMessage, World } from '../world.js';
import { actorsOf, partiesOfQuote, partiesOfRequest, type QuoteRequest } from './quote-parties.js';
import type { WalletPorts } from './wallet.js';
import { signerOf, verifyStampOver, type StampFact } from './wallet-signed-request.js';

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
    const { decided, quote } = decideCreateQuote(parties, request, at);
    world.quotes.decidedHere(decided, quote);
    const events: Array<DomainEvent | EngineEvent<TimerMessage>> = [decided];
    if (lookupUsed !== undefined) events.push({ ...lookupUsed, quoteId: quote.id });
    // Its payment shares its UUID: a transaction of it names the quote by its id alone (derived-ids.ts).
    if (request.immediatelyExecute === true) events.push(...executionEvents(decideExecuteQuote(quote, parties, world, at, executionTransactionIdOf(quote.id)), at));
    else events.push(expiryTimer(quote, at));
    return { events, reply: () => world.quotes.get(quote.id)! };
  },
};

/** An execute's Service-Wallet-Signature, as the request carried it, and the ports that verify it. */
export interface WalletStampInput {
  header: string | undefined;
  ports: WalletPorts;
}

/** The payload an EMBEDDED_WALLET source must have stamped to pay the quote; undefined for any other source. */
function payloadToStamp(quote: Quote, parties: QuoteParties): string | undefined {
  const source = parties.source;
  if (source.kind !== 'INTERNAL' || source.account.type !== 'EMBEDDED_WALLET') return undefined;
  if (quote.payloadToSign === undefined) throw new Error(`quote ${quote.id} from EMBEDDED_WALLET ${quote.sourceAccountId} has no payloadToSign`);
  return quote.payloadToSign;
}

/**
 * Executes a quote. From an EMBEDDED_WALLET, the stamp over the quote's payloadToSign is
 * verified first, before anything is held; the decision, holding the source account (the
 * wallet's actor), checks that its key is still a live session's, so a session revoked or
 * expired meanwhile is refused as if it had ended before the stamp was checked.
 */
export const executeQuote: DomainCommand<{ env: PlatformEnv; quoteId: string; stamp: WalletStampInput }, Quote, StampFact | undefined> = {
  name: 'quote.execute',
  prepare: async ({ env, quoteId, stamp }, world) => {
    const quote = quoteIn(world, env.id, quoteId);
    const payload = payloadToStamp(quote, partiesOfQuote(world, env, quote));
    return payload === undefined ? undefined : verifyStampOver(stamp.ports, env.environment, stamp.header, payload);
  },
  actors: ({ env, quoteId }, world) => actorsOf(world, partiesOfQuote(world, env, quoteIn(world, env.id, quoteId))),
  decide: ({ env, quoteId }, world, at, stamp) => {
    const quote = quoteIn(world, env.id, quoteId);
    const parties = partiesOfQuote(world, env, quote);
    // A quote's payloadToSign is fixed when it is made: the stamp was verified over this one.
    if (payloadToStamp(quote, parties) !== undefined) signerOf(world.wallets.ofAccount(quote.sourceAccountId), preparedFact(stamp, 'quote.execute'), at);
    return {
      events: [cancelExpiry(quote), ...executionEvents(decideExecuteQuote(quote, parties, world, at), at)],
      reply: () => world.quotes.get(quoteId)!,
    };
  },
};
