// POST /sandbox/send (CONTRACT.md "Money"): the sandbox's stand-in for money sent from
// outside against a REALTIME_FUNDING quote's payment instructions. The money enters the
// service and the quote's payment proceeds to its destination in the same log entry; the
// result is the Transaction it made. The decision holds the quote's parties (the quote's
// owner, the customer or the environment for the platform; the credited account and its
// customer). The environment comes with the input, as for every quote (commands/quotes.ts).
import { idOf } from '../../src/engine/ids.js';
import { DomainError, invalidField } from '../errors.js';
import { decideFundQuote } from '../payment.js';
import type { PlatformEnv } from '../platform.js';
import { cancelExpiry, type Quote } from '../quote.js';
import type { Transaction } from '../transaction.js';
import type { DomainCommand, World } from '../world.js';
import { actorsOf, partiesOfQuote } from './quote-parties.js';
import { quoteIn } from './quotes.js';

/** Money sent for a funding quote: the quote by id, or by the reference its instructions carry. */
export interface SandboxSend {
  quoteId?: string;
  reference?: string;
  currencyCode: string;
  /** Smallest unit; must be the quote's totalSendingAmount (required with a reference, as a bank transfer carries one). */
  currencyAmount?: number;
}

/** The funding quote the money is for: by id, or by reference (then with an amount). */
function fundedQuote(world: World, env: PlatformEnv, send: SandboxSend): Quote {
  if (send.quoteId !== undefined) {
    if (send.reference !== undefined) throw invalidField('reference', 'name the quote by quoteId or by reference, not both');
    return quoteIn(world, env.id, send.quoteId);
  }
  if (send.reference === undefined) throw invalidField('quoteId', 'quoteId or reference is required');
  if (send.currencyAmount === undefined) throw invalidField('currencyAmount', 'is required when the quote is named by reference');
  const quote = world.quotes.byFundingReference(env.id, send.reference);
  if (quote === undefined) {
    throw new DomainError('NOT_FOUND', `no REALTIME_FUNDING quote has the reference ${send.reference}`, [{ field: 'reference', message: 'no quote with this reference in this environment' }]);
  }
  return quote;
}

export const sandboxSend: DomainCommand<{ env: PlatformEnv; send: SandboxSend }, Transaction> = {
  name: 'sandbox.send',
  actors: ({ env, send }, world) => actorsOf(world, partiesOfQuote(world, env, fundedQuote(world, env, send))),
  decide: ({ env, send }, world, at) => {
    const quote = fundedQuote(world, env, send);
    const sent = { currency: send.currencyCode, amount: send.currencyAmount };
    const event = decideFundQuote(quote, partiesOfQuote(world, env, quote), sent, world, at);
    const txId = idOf(event.transactionId, 'Transaction');
    return { events: [cancelExpiry(quote), event], reply: () => world.transactions.get(txId)! };
  },
};
