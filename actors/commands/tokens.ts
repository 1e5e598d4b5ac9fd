// API token commands (CONTRACT.md "Today's clients, second wave"): a token is made in the
// environment of the token that asks, and revoked there. The secret is drawn and hashed
// before the command (src/http/platform-auth.ts): a decision sees only its hash.
import { newId } from '../../src/engine/ids.js';
import { DomainError, invalidField } from '../errors.js';
import { MAX_TOKENS_PER_ENV, PERMISSIONS, tokenRecordOf, type Permission, type PlatformEnv, type TokenRecord } from '../platform.js';
import type { DomainCommand } from '../world.js';

export interface NewToken {
  envId: string;
  name: string;
  permissions: readonly Permission[];
  /** The client id drawn for it, and its secret's hash. */
  tokenId: string;
  secretHash: string;
}

/** The token `id` of the environment; a 404 names the path parameter. */
export function tokenIn(env: PlatformEnv, id: string): TokenRecord {
  for (const token of env.tokens) {
    const record = tokenRecordOf(env, token);
    if (record.id === id) return record;
  }
  throw new DomainError('TOKEN_NOT_FOUND', `token ${id} not found`, [{ field: 'tokenId', message: `no token ${id} in this environment` }]);
}

export const createToken: DomainCommand<NewToken, TokenRecord> = {
  name: 'token.create',
  actors: ({ envId }) => [envId],
  decide: ({ envId, name, permissions, tokenId, secretHash }, world, at) => {
    const env = world.envs.get(envId)!;
    if (env.tokens.length >= MAX_TOKENS_PER_ENV) {
      throw invalidField('name', `this environment holds ${MAX_TOKENS_PER_ENV} tokens, the most it may; delete one first`);
    }
    // A set, in the order PERMISSIONS lists them, however the request listed them.
    const held = PERMISSIONS.filter((p) => permissions.includes(p));
    const id = newId('Token', at);
    return {
      events: [{ type: 'token.created', envId, token: { id, tokenId, secretHash, name, permissions: held } }],
      reply: () => tokenIn(world.envs.get(envId)!, id),
    };
  },
};

/**
 * Revokes token `id`. `callerTokenId` is the client id that asks: a token cannot revoke
 * itself (the answer would be its last), nor the environment's last token that may manage
 * tokens (no one could make another).
 */
export const revokeToken: DomainCommand<{ envId: string; id: string; callerTokenId: string }, TokenRecord> = {
  name: 'token.revoke',
  actors: ({ envId }) => [envId],
  decide: ({ envId, id, callerTokenId }, world) => {
    const env = world.envs.get(envId)!;
    const token = tokenIn(env, id);
    if (token.tokenId === callerTokenId) throw invalidField('tokenId', 'a token cannot delete itself; delete it with another token of this environment');
    const managers = env.tokens.filter((t) => tokenRecordOf(env, t).permissions.includes('MANAGE'));
    if (token.permissions.includes('MANAGE') && managers.length === 1) {
      throw invalidField('tokenId', "this is the environment's last token with MANAGE; make another before deleting it");
    }
    return { events: [{ type: 'token.revoked', envId, tokenId: token.tokenId }], reply: () => token };
  },
};
