// Reads of an environment's API tokens: one by id, and the list with the vendor's filters.
// An environment holds at most MAX_TOKENS_PER_ENV tokens, so both walk its record.
import { tokenIn } from '../commands/tokens.js';
import { paginate, type Page, type PageRequest } from '../page.js';
import { tokenRecordOf, type TokenRecord } from '../platform.js';
import type { DomainQuery } from '../world.js';

/** What a list of tokens selects; time bounds are epoch ms, inclusive (a token's update time is its creation time). */
export interface TokenFilter {
  name?: string;
  createdFrom: number;
  createdTo: number;
  updatedFrom: number;
  updatedTo: number;
}

export const token: DomainQuery<{ envId: string; id: string }, TokenRecord> = ({ envId, id }, world) => tokenIn(world.envs.get(envId)!, id);

export const tokenPage: DomainQuery<{ envId: string; filter: TokenFilter; page: PageRequest }, Page<TokenRecord>> = ({ envId, filter, page }, world) => {
  const env = world.envs.get(envId)!;
  const byId = new Map<string, TokenRecord>();
  for (const t of env.tokens) {
    const record = tokenRecordOf(env, t);
    const at = record.createdAt;
    const selected = (filter.name === undefined || record.name === filter.name) && at >= filter.createdFrom && at <= filter.createdTo && at >= filter.updatedFrom && at <= filter.updatedTo;
    if (selected) byId.set(record.id, record);
  }
  return paginate([...byId.keys()].sort(), page, (id) => byId.get(id), (record) => record);
};
