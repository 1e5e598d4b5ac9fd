// Reads of one record by id within the calling environment, each a 404 naming its path
// parameter when the environment holds no such record, and of the environment's own settings.
import type { PlatformEnv } from '../platform.js';
import type { Quote } from '../quote.js';
import { quoteIn } from '../commands/quotes.js';
import type { DomainQuery } from '../world.js';

export const quote: DomainQuery<{ envId: string; quoteId: string }, Quote> = ({ envId, quoteId }, world) => quoteIn(world, envId, quoteId);

/** The environment as it is now: its configuration, with what PATCH /config changed. */
export const platformEnv: DomainQuery<{ envId: string }, PlatformEnv> = ({ envId }, world) => world.envs.get(envId)!;
