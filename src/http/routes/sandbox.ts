// POST /sandbox/send (CONTRACT.md "Money"): the sandbox's stand-in for money sent from
// outside against a REALTIME_FUNDING quote's payment instructions. The money enters the
// service and the quote's payment proceeds to its destination in the same log entry; the
// answer is the Transaction it made. The decision holds the quote's owner (the customer,
// or the environment for the platform), the credited account and its customer.
import { Type, type Static } from '@sinclair/typebox';
import { DomainError, invalidField } from '../../../actors/errors.js';
import { LOCKED_AMOUNT_LIMIT } from '../../../actors/fx.js';
import { decideFundQuote } from '../../../actors/payment.js';
import type { PlatformEnv } from '../../../actors/platform.js';
import type { Quote } from '../../../actors/quote.js';
import { renderTransaction } from '../../../actors/transaction.js';
import type { Services } from '../../services.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { CurrencyCode, IdOf } from '../schemas/resources.js';
import { TransactionView } from '../schemas/payments.js';
import { Obj, Str, validator } from '../validation.js';
import { actorsOf, partiesOf, payeeOfQuote, payerOfQuote, quoteOf } from './quotes.js';

const Send = Obj({
  quoteId: Type.Optional(IdOf('Quote')),
  reference: Type.Optional(Str({ minLength: 1, maxLength: 64, description: "the reference of the quote's paymentInstructions" })),
  currencyCode: CurrencyCode,
  currencyAmount: Type.Optional(Type.Integer({ minimum: 1, maximum: LOCKED_AMOUNT_LIMIT, description: "smallest unit; must be the quote's totalSendingAmount" })),
});
type SendBody = Static<typeof Send>;

/** The funding quote the body names: by id, or by reference (then with an amount, as a bank transfer carries one). */
function fundedQuote(services: Services, env: PlatformEnv, body: SendBody): Quote {
  if (body.quoteId !== undefined) {
    if (body.reference !== undefined) throw invalidField('reference', 'name the quote by quoteId or by reference, not both');
    return quoteOf(services, env, body.quoteId);
  }
  if (body.reference === undefined) throw invalidField('quoteId', 'quoteId or reference is required');
  if (body.currencyAmount === undefined) throw invalidField('currencyAmount', 'is required when the quote is named by reference');
  const quote = services.world.quotes.byFundingReference(env.id, body.reference);
  if (quote === undefined) {
    throw new DomainError('NOT_FOUND', `no REALTIME_FUNDING quote has the reference ${body.reference}`, [{ field: 'reference', message: 'no quote with this reference in this environment' }]);
  }
  return quote;
}

function send(ctx: RouteContext<SendBody, undefined>): Promise<Reply> {
  const { services, env, body } = ctx;
  const known = fundedQuote(services, env, body);
  const knownParties = partiesOf(env, services, payerOfQuote(services, env, known), payeeOfQuote(services, env, known));
  return ctx.exec(actorsOf(knownParties, true), (at) => {
    // Read again now that the actors are held.
    const quote = quoteOf(services, env, known.id);
    const parties = partiesOf(env, services, payerOfQuote(services, env, quote), payeeOfQuote(services, env, quote));
    const event = decideFundQuote(quote, parties, { currency: body.currencyCode, ...(body.currencyAmount !== undefined ? { amount: body.currencyAmount } : {}) }, services.world, at);
    const txId = event.transactions[0]!.id;
    return {
      events: [services.engine.cancelTimer(quote.id), event],
      reply: () => ({ status: 200, body: renderTransaction(services.world.transactions.get(txId)!) }),
    };
  });
}

export const sandboxRoutes: Route[] = [
  route<SendBody>({
    method: 'POST',
    path: '/sandbox/send',
    summary: "Simulate the money of a REALTIME_FUNDING quote arriving (sandbox only): it is paid to the quote's destination",
    tag: 'Sandbox',
    body: validator(Send),
    response: TransactionView,
    status: 200,
    sandboxOnly: true,
    idempotent: true,
    handle: (ctx) => send(ctx),
  }),
];
