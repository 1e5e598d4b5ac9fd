// Internal accounts (reads), external accounts (create, list, read, delete) for customers
// and for the platform, and sandbox funding.
import { Type, type Static } from '@sinclair/typebox';
import { renderExternalAccount, type ExternalAccount } from '../../../actors/external-account.js';
import { INTERNAL_ACCOUNT_TYPES, MAX_FUND_AMOUNT, renderInternalAccount, type InternalAccount } from '../../../actors/internal-account.js';
import { CRYPTO_NETWORKS } from '../../../actors/identifiers.js';
import { createExternalAccount, deleteExternalAccount, fundSandboxAccount, type ExternalAccountScope } from '../../../actors/commands/accounts.js';
import {
  externalAccount,
  externalAccountPage,
  internalAccount,
  internalAccountPage,
  type ExternalAccountFilter,
  type InternalAccountFilter,
} from '../../../actors/queries/accounts.js';
import type { Page, PageRequest } from '../../../actors/page.js';
import { invalidInput } from '../../../actors/errors.js';
import { PageQuery } from '../pagination.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { recordReply } from '../record-reply.js';
import { AccountInfoSchema, checkAccountInfo } from '../schemas/account-info.js';
import { componentRef } from '../schemas/named.js';
import { CurrencyCode, ExternalAccountView, IdOf, InternalAccountView, ListOf } from '../schemas/resources.js';
import { checkKnownCurrency, Obj, StringEnum, Text, validator, type Parsed } from '../validation.js';

const AccountType = StringEnum(INTERNAL_ACCOUNT_TYPES);
/**
 * Checked by checkAccountInfo, whose errors name the variant's fields (a union's would not),
 * so the schema accepts anything; published as a reference to the AccountInfo component,
 * so clients get its type.
 */
const AccountInfoInput = Type.Unknown({ $ref: componentRef(AccountInfoSchema), description: 'An AccountInfo variant, discriminated by accountType' });

const ListInternal = Obj({ customerId: Type.Optional(IdOf('Customer')), type: Type.Optional(AccountType), ...PageQuery });
const ListCustomerInternal = Obj({
  customerId: Type.Optional(IdOf('Customer')),
  currency: Type.Optional(CurrencyCode),
  type: Type.Optional(AccountType),
  ...PageQuery,
});
const ListPlatformInternal = Obj({ currency: Type.Optional(CurrencyCode), type: Type.Optional(AccountType), ...PageQuery });

const CreateExternal = Obj(
  {
    currency: CurrencyCode,
    accountInfo: AccountInfoInput,
    customerId: Type.Optional(IdOf('Customer')),
    platformAccountId: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
    defaultUmaDepositAccount: Type.Optional(Type.Boolean()),
    cryptoNetwork: Type.Optional(StringEnum(CRYPTO_NETWORKS)),
  },
  { $id: 'CreateExternalAccountRequest' },
);
const CreatePlatformExternal = Obj(
  {
    currency: CurrencyCode,
    accountInfo: AccountInfoInput,
    platformAccountId: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
    cryptoNetwork: Type.Optional(StringEnum(CRYPTO_NETWORKS)),
  },
  { $id: 'CreatePlatformExternalAccountRequest' },
);
const ListExternal = Obj({ currency: Type.Optional(CurrencyCode), customerId: Type.Optional(IdOf('Customer')), ...PageQuery });
const ListPlatformExternal = Obj({ currency: Type.Optional(CurrencyCode), ...PageQuery });

const Fund = Obj({ amount: Type.Integer({ minimum: 1, maximum: MAX_FUND_AMOUNT }) }, { $id: 'FundSandboxInternalAccountRequest' });
const AccountIdParam = validator(Obj({ accountId: IdOf('InternalAccount') }));
const IdParam = validator(Obj({ id: IdOf('InternalAccount') }));
const ExternalIdParam = validator(Obj({ id: IdOf('ExternalAccount') }));
type IdParams = Parsed<typeof ExternalIdParam>;

/** A page of records as the API shows it. */
function pageReply<R, V>(page: Page<R>, render: (record: R) => V): Reply {
  return { status: 200, body: { ...page, data: page.data.map(render) } };
}

async function listInternal(ctx: RouteContext<undefined, PageRequest>, filter: InternalAccountFilter): Promise<Reply> {
  return pageReply(await ctx.read(internalAccountPage, { envId: ctx.env.id, filter, page: ctx.query }), renderInternalAccount);
}

const createdExternal = (account: ExternalAccount): Reply => recordReply(201, 'ExternalAccount', account);
const fundedAccount = (account: InternalAccount): Reply => recordReply(200, 'InternalAccount', account);

function createExternal(
  ctx: RouteContext<unknown, unknown>,
  input: { currency: string; accountInfo: unknown; customerId?: string; platformAccountId?: string; defaultUmaDepositAccount?: boolean; cryptoNetwork?: string },
): Promise<Reply> {
  const { env } = ctx;
  checkKnownCurrency(input.currency);
  const info = checkAccountInfo(input.accountInfo);
  if (!info.ok) throw invalidInput(info.errors);
  const account = { ...input, accountInfo: info.value };
  return ctx.run(createExternalAccount, { envId: env.id, environment: env.environment, account }, createdExternal);
}

async function listExternal(ctx: RouteContext<undefined, PageRequest>, filter: ExternalAccountFilter): Promise<Reply> {
  return pageReply(await ctx.read(externalAccountPage, { envId: ctx.env.id, filter, page: ctx.query }), renderExternalAccount);
}

async function readExternal(ctx: RouteContext<undefined, undefined, IdParams>, scope: ExternalAccountScope): Promise<Reply> {
  return { status: 200, body: renderExternalAccount(await ctx.read(externalAccount, { envId: ctx.env.id, accountId: ctx.params.id, scope })) };
}

function deleteExternal(ctx: RouteContext<undefined, undefined, IdParams>, scope: ExternalAccountScope): Promise<Reply> {
  return ctx.run(deleteExternalAccount, { envId: ctx.env.id, accountId: ctx.params.id, scope }, () => ({ status: 204, body: undefined }));
}

/**
 * GET and DELETE of one external account, under /customers (any of the environment's) or
 * /platform (the platform's), published as `operationIds`.
 */
function externalAccountByIdRoutes(
  prefix: '/customers' | '/platform',
  scope: ExternalAccountScope,
  operationIds: { get: string; delete: string },
): Route[] {
  const whose = scope === 'platform' ? "one of the platform's external accounts" : "an external account (a customer's or the platform's)";
  return [
    route({
      method: 'GET',
      path: `${prefix}/external-accounts/{id}`,
      operationId: operationIds.get,
      summary: `Read ${whose}; a deleted one is 404`,
      tag: 'External accounts',
      permission: 'VIEW',
      params: ExternalIdParam,
      response: ExternalAccountView,
      status: 200,
      handle: (ctx) => readExternal(ctx, scope),
    }),
    route({
      method: 'DELETE',
      path: `${prefix}/external-accounts/{id}`,
      operationId: operationIds.delete,
      summary: `Delete ${whose}: gone from reads and lists, refused as a payment's destination; payouts under way finish`,
      tag: 'External accounts',
      permission: 'MANAGE',
      params: ExternalIdParam,
      status: 204,
      idempotent: true,
      handle: (ctx) => deleteExternal(ctx, scope),
    }),
  ];
}

export const accountRoutes: Route[] = [
  route<undefined, Static<typeof ListInternal>>({
    method: 'GET',
    path: '/internal-accounts',
    operationId: 'listInternalAccounts',
    summary: "List internal accounts (customers' and the platform's)",
    tag: 'Internal accounts',
    permission: 'VIEW',
    query: validator(ListInternal, { coerce: true }),
    response: ListOf(InternalAccountView),
    status: 200,
    handle: (ctx) => listInternal(ctx, { owner: 'any', ...ctx.query }),
  }),
  route({
    method: 'GET',
    path: '/internal-accounts/{id}',
    operationId: 'getInternalAccount',
    summary: 'Read an internal account',
    tag: 'Internal accounts',
    permission: 'VIEW',
    params: IdParam,
    response: InternalAccountView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderInternalAccount(await read(internalAccount, { envId: env.id, accountId: params.id })) }),
  }),
  route<undefined, Static<typeof ListCustomerInternal>>({
    method: 'GET',
    path: '/customers/internal-accounts',
    operationId: 'listCustomerInternalAccounts',
    summary: "List customers' internal accounts",
    tag: 'Internal accounts',
    permission: 'VIEW',
    query: validator(ListCustomerInternal, { coerce: true }),
    response: ListOf(InternalAccountView),
    status: 200,
    handle: (ctx) => listInternal(ctx, { owner: 'customers', ...ctx.query }),
  }),
  route<undefined, Static<typeof ListPlatformInternal>>({
    method: 'GET',
    path: '/platform/internal-accounts',
    operationId: 'listPlatformInternalAccounts',
    summary: "List the platform's own internal accounts",
    tag: 'Internal accounts',
    permission: 'VIEW',
    query: validator(ListPlatformInternal, { coerce: true }),
    response: ListOf(InternalAccountView),
    status: 200,
    handle: (ctx) => listInternal(ctx, { owner: 'platform', ...ctx.query }),
  }),
  route<Static<typeof CreateExternal>>({
    method: 'POST',
    path: '/customers/external-accounts',
    operationId: 'createExternalAccount',
    summary: 'Create an external account for a customer, or for the platform when customerId is omitted',
    tag: 'External accounts',
    permission: 'MANAGE',
    body: validator(CreateExternal),
    response: ExternalAccountView,
    status: 201,
    idempotent: true,
    handle: (ctx) => createExternal(ctx, ctx.body),
  }),
  route<undefined, Static<typeof ListExternal>>({
    method: 'GET',
    path: '/customers/external-accounts',
    operationId: 'listExternalAccounts',
    summary: 'List external accounts',
    tag: 'External accounts',
    permission: 'VIEW',
    query: validator(ListExternal, { coerce: true }),
    response: ListOf(ExternalAccountView),
    status: 200,
    handle: (ctx) => listExternal(ctx, { platformOnly: false, ...ctx.query }),
  }),
  ...externalAccountByIdRoutes('/customers', 'environment', { get: 'getExternalAccount', delete: 'deleteExternalAccount' }),
  route<Static<typeof CreatePlatformExternal>>({
    method: 'POST',
    path: '/platform/external-accounts',
    operationId: 'createPlatformExternalAccount',
    summary: 'Create an external account for the platform',
    tag: 'External accounts',
    permission: 'MANAGE',
    body: validator(CreatePlatformExternal),
    response: ExternalAccountView,
    status: 201,
    idempotent: true,
    handle: (ctx) => createExternal(ctx, ctx.body),
  }),
  route<undefined, Static<typeof ListPlatformExternal>>({
    method: 'GET',
    path: '/platform/external-accounts',
    operationId: 'listPlatformExternalAccounts',
    summary: "List the platform's external accounts",
    tag: 'External accounts',
    permission: 'VIEW',
    query: validator(ListPlatformExternal, { coerce: true }),
    response: ListOf(ExternalAccountView),
    status: 200,
    handle: (ctx) => listExternal(ctx, { platformOnly: true, ...ctx.query }),
  }),
  ...externalAccountByIdRoutes('/platform', 'platform', { get: 'getPlatformExternalAccount', delete: 'deletePlatformExternalAccount' }),
  route<Static<typeof Fund>, undefined, Parsed<typeof AccountIdParam>>({
    method: 'POST',
    path: '/sandbox/internal-accounts/{accountId}/fund',
    operationId: 'fundSandboxInternalAccount',
    summary: 'Add simulated funds to an internal account (sandbox only)',
    tag: 'Sandbox',
    permission: 'TRANSACT',
    body: validator(Fund),
    response: InternalAccountView,
    status: 200,
    params: AccountIdParam,
    sandboxOnly: true,
    idempotent: true,
    handle: (ctx) => ctx.run(fundSandboxAccount, { envId: ctx.env.id, accountId: ctx.params.accountId, amount: ctx.body.amount }, fundedAccount),
  }),
];
