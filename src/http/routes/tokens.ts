// API tokens of the calling environment (CONTRACT.md "Today's clients, second wave"): make
// one with a name and permissions, list, read, revoke. The secret is drawn here, before the
// decision, which sees only its hash; it is in the 201 and nowhere else, not even in what
// an Idempotency-Key's replay answers (docs/api.md says why). Once a change is durable, a
// host that authenticates against a copy of the tokens is told (TokensChanged) before the
// answer goes out.
import { Type, type Static } from '@sinclair/typebox';
import { PERMISSIONS, renderToken, type TokenRecord } from '../../../actors/platform.js';
import { createToken, revokeToken } from '../../../actors/commands/tokens.js';
import { token, tokenPage } from '../../../actors/queries/tokens.js';
import { platformEnv } from '../../../actors/queries/records.js';
import { PageQuery } from '../pagination.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { IdOf, ListOf } from '../schemas/resources.js';
import { DateTime, instant, List, Obj, Str, StringEnum, Text, validator } from '../validation.js';

const Permission = StringEnum(PERMISSIONS, { $id: 'Permission', description: 'VIEW: every GET. TRANSACT: move money. MANAGE: configuration, tokens, customers and accounts, webhooks' });

const ApiTokenView = Obj(
  {
    id: Str(),
    name: Str(),
    permissions: List(Permission),
    clientId: Str({ description: 'the user name of HTTP Basic credentials' }),
    clientSecret: Type.Optional(Str({ description: 'the password of HTTP Basic credentials: only in the answer that made the token, never again' })),
    createdAt: Str({ format: 'date-time' }),
    updatedAt: Str({ format: 'date-time' }),
  },
  { $id: 'ApiToken' },
);

const CreateToken = Obj(
  {
    name: Text({ minLength: 1, maxLength: 255 }),
    permissions: List(Permission, { minItems: 1, maxItems: 3, uniqueItems: true }),
  },
  { $id: 'ApiTokenCreateRequest' },
);

const ListTokens = Obj({
  name: Type.Optional(Text({ maxLength: 255, description: 'the name, exactly' })),
  createdAfter: Type.Optional(DateTime),
  createdBefore: Type.Optional(DateTime),
  updatedAfter: Type.Optional(DateTime),
  updatedBefore: Type.Optional(DateTime),
  ...PageQuery,
});
type TokenListQuery = Static<typeof ListTokens>;

const TokenIdSchema = Obj({ tokenId: IdOf('Token') });
const TokenIdParam = validator(TokenIdSchema);
type TokenIdParams = Static<typeof TokenIdSchema>;

async function create(ctx: RouteContext<Static<typeof CreateToken>, undefined>): Promise<Reply> {
  const { tokenId, clientSecret, secretHash } = ctx.ports.issueToken(ctx.env.environment);
  const { name, permissions } = ctx.body;
  const reply = await ctx.run(createToken, { envId: ctx.env.id, name, permissions, tokenId, secretHash }, (made: TokenRecord) => {
    const view = renderToken(made);
    return { status: 201, body: { ...view, clientSecret }, replayBody: view };
  });
  await ctx.ports.tokensChanged(await ctx.read(platformEnv, { envId: ctx.env.id }));
  return reply;
}

async function revoke(ctx: RouteContext<undefined, undefined, TokenIdParams>): Promise<Reply> {
  const reply = await ctx.run(revokeToken, { envId: ctx.env.id, id: ctx.params.tokenId, callerTokenId: ctx.tokenId }, () => ({ status: 204, body: undefined }));
  await ctx.ports.tokensChanged(await ctx.read(platformEnv, { envId: ctx.env.id }));
  return reply;
}

async function list(ctx: RouteContext<undefined, TokenListQuery>): Promise<Reply> {
  const q = ctx.query;
  const filter = {
    name: q.name,
    createdFrom: instant('createdAfter', q.createdAfter) ?? -Infinity,
    createdTo: instant('createdBefore', q.createdBefore) ?? Infinity,
    updatedFrom: instant('updatedAfter', q.updatedAfter) ?? -Infinity,
    updatedTo: instant('updatedBefore', q.updatedBefore) ?? Infinity,
  };
  const page = await ctx.read(tokenPage, { envId: ctx.env.id, filter, page: q });
  return { status: 200, body: { ...page, data: page.data.map(renderToken) } };
}

export const tokenRoutes: Route[] = [
  route<Static<typeof CreateToken>>({
    method: 'POST',
    path: '/tokens',
    operationId: 'createToken',
    summary: "Make an API token in the caller's environment; its clientSecret is in this answer only",
    tag: 'API Tokens',
    permission: 'MANAGE',
    body: validator(CreateToken),
    response: ApiTokenView,
    status: 201,
    idempotent: true,
    handle: create,
  }),
  route<undefined, TokenListQuery>({
    method: 'GET',
    path: '/tokens',
    operationId: 'listTokens',
    summary: "List the environment's API tokens (never their secrets)",
    tag: 'API Tokens',
    permission: 'VIEW',
    query: validator(ListTokens, { coerce: true }),
    response: ListOf(ApiTokenView),
    status: 200,
    handle: list,
  }),
  route<undefined, undefined, TokenIdParams>({
    method: 'GET',
    path: '/tokens/{tokenId}',
    operationId: 'getTokenById',
    summary: 'Read an API token (never its secret)',
    tag: 'API Tokens',
    permission: 'VIEW',
    params: TokenIdParam,
    response: ApiTokenView,
    status: 200,
    handle: async (ctx) => ({ status: 200, body: renderToken(await ctx.read(token, { envId: ctx.env.id, id: ctx.params.tokenId })) }),
  }),
  route<undefined, undefined, TokenIdParams>({
    method: 'DELETE',
    path: '/tokens/{tokenId}',
    operationId: 'deleteTokenById',
    summary: "Revoke an API token: refused from the next request on. Not the caller's own, nor the environment's last MANAGE token",
    tag: 'API Tokens',
    permission: 'MANAGE',
    params: TokenIdParam,
    status: 204,
    handle: revoke,
  }),
];
