// Transfers (CONTRACT.md "Money"): POST /transfer-in moves money from an external bank
// account into an internal account, POST /transfer-out the other way; same currency, no
// quote. The commands, and what their decisions hold, are in actors/commands/transfers.ts.
import { Type, type Static } from '@sinclair/typebox';
import { transferIn, transferOut } from '../../../actors/commands/transfers.js';
import { MAX_FUND_AMOUNT } from '../../../actors/internal-account.js';
import type { Transaction } from '../../../actors/transaction.js';
import { route, type Reply, type Route } from '../route.js';
import { recordReply } from '../record-reply.js';
import { TransactionView } from '../schemas/payments.js';
import { Obj, Str, Text, validator } from '../validation.js';

const AccountId = (description: string) => Text({ minLength: 1, maxLength: 64, description });
const Amount = Type.Integer({ minimum: 1, maximum: MAX_FUND_AMOUNT, description: 'in the smallest unit of the currency' });

const TransferIn = Obj(
  {
    source: Obj({ accountId: AccountId('ExternalAccount:<id>') }),
    destination: Obj({ accountId: AccountId('InternalAccount:<id>') }),
    amount: Amount,
  },
  { $id: 'CreateTransferInRequest' },
);
type TransferInBody = Static<typeof TransferIn>;

const TransferOut = Obj(
  {
    source: Obj({ accountId: AccountId('InternalAccount:<id>') }),
    destination: Obj({
      accountId: AccountId('ExternalAccount:<id>'),
      paymentRail: Type.Optional(Str({ pattern: '^[A-Z][A-Z0-9_]{1,31}$', description: 'for example ACH, WIRE' })),
    }),
    amount: Type.Optional(Amount),
    remittanceInformation: Type.Optional(Text({ maxLength: 1024 })),
  },
  { $id: 'CreateTransferOutRequest' },
);
type TransferOutBody = Static<typeof TransferOut>;

const created = (tx: Transaction): Reply => recordReply(201, 'Transaction', tx);

export const transferRoutes: Route[] = [
  route<TransferInBody>({
    method: 'POST',
    path: '/transfer-in',
    operationId: 'createTransferIn',
    summary: 'Move money from an external bank account into an internal account of the same currency',
    tag: 'Transfers',
    permission: 'TRANSACT',
    body: validator(TransferIn),
    response: TransactionView,
    status: 201,
    idempotent: true,
    handle: (ctx) => ctx.run(transferIn, { env: ctx.env, request: ctx.body }, created),
  }),
  route<TransferOutBody>({
    method: 'POST',
    path: '/transfer-out',
    operationId: 'createTransferOut',
    summary: 'Move money from an internal account to an external bank account of the same currency (amount omitted: the whole balance)',
    tag: 'Transfers',
    permission: 'TRANSACT',
    body: validator(TransferOut),
    response: TransactionView,
    status: 201,
    idempotent: true,
    handle: (ctx) => ctx.run(transferOut, { env: ctx.env, request: ctx.body }, created),
  }),
];
