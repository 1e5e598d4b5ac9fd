// POST /sandbox/send (CONTRACT.md "Money"): the sandbox's stand-in for money sent from
// outside against a REALTIME_FUNDING quote's payment instructions; the command, and what
// its decision holds, are in actors/commands/sandbox.ts.
import { Type, type Static } from '@sinclair/typebox';
import { sandboxSend } from '../../../actors/commands/sandbox.js';
import { LOCKED_AMOUNT_LIMIT } from '../../../actors/fx.js';
import { route, type Route } from '../route.js';
import { recordReply } from '../record-reply.js';
import { CurrencyCode, IdOf } from '../schemas/resources.js';
import { TransactionView } from '../schemas/payments.js';
import { Obj, Text, validator } from '../validation.js';

const Send = Obj(
  {
    quoteId: Type.Optional(IdOf('Quote')),
    reference: Type.Optional(Text({ minLength: 1, maxLength: 64, description: "the reference of the quote's paymentInstructions" })),
    currencyCode: CurrencyCode,
    currencyAmount: Type.Optional(Type.Integer({ minimum: 1, maximum: LOCKED_AMOUNT_LIMIT, description: "smallest unit; must be the quote's totalSendingAmount" })),
  },
  { $id: 'SendSandboxFundsRequest' },
);
type SendBody = Static<typeof Send>;

export const sandboxRoutes: Route[] = [
  route<SendBody>({
    method: 'POST',
    path: '/sandbox/send',
    operationId: 'sendSandboxFunds',
    summary: "Simulate the money of a REALTIME_FUNDING quote arriving (sandbox only): it is paid to the quote's destination",
    tag: 'Sandbox',
    permission: 'TRANSACT',
    body: validator(Send),
    response: TransactionView,
    status: 200,
    sandboxOnly: true,
    idempotent: true,
    handle: (ctx) => ctx.run(sandboxSend, { env: ctx.env, send: ctx.body }, (tx) => recordReply(200, 'Transaction', tx)),
  }),
];
