// Quotes (SERVICE_SPEC part 4, CONTRACT.md "Money"): create (optionally executing at once),
// read, execute (from an EMBEDDED_WALLET: with a stamp over the quote's payloadToSign).
// The commands, who pays and who is paid and what each decision holds, are in
// actors/commands/quotes.ts, the stamp check among them (through the wallet's ports, src/wallet).
import { Type, type Static } from '@sinclair/typebox';
import { createQuote, executeQuote } from '../../../actors/commands/quotes.js';
import { quote } from '../../../actors/queries/records.js';
import { LOCKED_AMOUNT_LIMIT } from '../../../actors/fx.js';
import { LOCKED_SIDES, PURPOSES_OF_PAYMENT, renderQuote, type Quote } from '../../../actors/quote.js';
import { route, type Reply, type Route } from '../route.js';
import { recordReply } from '../record-reply.js';
import { CurrencyCode, IdOf, UmaAddress } from '../schemas/resources.js';
import { QuoteView } from '../schemas/payments.js';
import { Obj, Str, StringEnum, Text, TextRecord, validator } from '../validation.js';

const AccountRef = Text({ minLength: 1, maxLength: 64, description: 'InternalAccount:<id> or ExternalAccount:<id>' });

const PayerData = TextRecord(Text(), 64, { maxProperties: 50, description: "payer data under the names of a lookup's requiredPayerDataFields" });

const CreateQuote = Obj(
  {
    source: Obj({
      sourceType: Type.Optional(StringEnum(['ACCOUNT', 'REALTIME_FUNDING'] as const)),
      accountId: Type.Optional(AccountRef),
      currency: Type.Optional(CurrencyCode),
      customerId: Type.Optional(IdOf('Customer')),
    }),
    destination: Obj({
      destinationType: StringEnum(['ACCOUNT', 'UMA_ADDRESS'] as const),
      accountId: Type.Optional(AccountRef),
      umaAddress: Type.Optional(UmaAddress),
      currency: Type.Optional(CurrencyCode),
      paymentRail: Type.Optional(Str({ pattern: '^[A-Z][A-Z0-9_]{1,31}$', description: 'for example ACH, WIRE' })),
    }),
    lookupId: Type.Optional(IdOf('Lookup')),
    lockedCurrencySide: StringEnum(LOCKED_SIDES),
    lockedCurrencyAmount: Type.Integer({ minimum: 1, maximum: LOCKED_AMOUNT_LIMIT }),
    description: Type.Optional(Text({ maxLength: 1024 })),
    purposeOfPayment: Type.Optional(StringEnum(PURPOSES_OF_PAYMENT)),
    senderCustomerInfo: Type.Optional(PayerData),
    immediatelyExecute: Type.Optional(Type.Boolean()),
  },
  { $id: 'CreateQuoteRequest' },
);
type CreateQuoteBody = Static<typeof CreateQuote>;

const QuoteIdParam = validator(Obj({ quoteId: IdOf('Quote') }));

const created = (quote: Quote): Reply => recordReply(201, 'Quote', quote);
const executed = (quote: Quote): Reply => recordReply(200, 'Quote', quote);

export const quoteRoutes: Route[] = [
  route<CreateQuoteBody>({
    method: 'POST',
    path: '/quotes',
    operationId: 'createQuote',
    summary: 'Create a quote from an internal account to an internal or external account (immediatelyExecute: execute it at once)',
    tag: 'Quotes',
    permission: 'TRANSACT',
    body: validator(CreateQuote),
    response: QuoteView,
    status: 201,
    idempotent: true,
    handle: (ctx) => ctx.run(createQuote, { env: ctx.env, request: ctx.body }, created),
  }),
  route({
    method: 'GET',
    path: '/quotes/{quoteId}',
    operationId: 'getQuote',
    summary: 'Read a quote',
    tag: 'Quotes',
    permission: 'VIEW',
    params: QuoteIdParam,
    response: QuoteView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderQuote(await read(quote, { envId: env.id, quoteId: params.quoteId })) }),
  }),
  route({
    method: 'POST',
    path: '/quotes/{quoteId}/execute',
    operationId: 'executeQuote',
    summary: 'Execute a quote: moves the money and creates its transaction (an EMBEDDED_WALLET source needs Service-Wallet-Signature over its payloadToSign)',
    tag: 'Quotes',
    permission: 'TRANSACT',
    params: QuoteIdParam,
    response: QuoteView,
    status: 200,
    idempotent: true,
    walletStamp: 'stamp',
    // An EMBEDDED_WALLET pays only on a stamp over the quote's payloadToSign: the request's Service-Wallet-Signature.
    handle: (ctx) => ctx.run(executeQuote, { env: ctx.env, quoteId: ctx.params.quoteId, stamp: { header: ctx.headers.walletSignature, ports: ctx.ports.wallet } }, executed),
  }),
];

