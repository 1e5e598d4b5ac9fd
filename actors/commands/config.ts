// Configuration commands (SERVICE_SPEC part 4, CONTRACT.md): PATCH /config. A newly
// supported currency gets a platform account in the same entry; the platform's accounts
// are made only here and at platform creation, both under the environment actor, and a
// currency is immutable once its account exists.
import { provisionAccounts } from '../internal-account.js';
import { patchedConfig, type ConfigPatch, type PlatformEnv } from '../platform.js';
import type { DomainCommand, DomainEvent } from '../world.js';

/** Holds the environment and the platform's accounts, whose currencies it reads. */
export const updateConfig: DomainCommand<{ envId: string; patch: ConfigPatch }, PlatformEnv> = {
  name: 'config.update',
  actors: ({ envId }, world) => [envId, ...world.internalAccounts.idsOwnedBy(envId)],
  decide: ({ envId, patch }, world, at) => {
    const config = patchedConfig(world.envs.get(envId)!.config, patch, at);
    const events: DomainEvent[] = [{ type: 'config.updated', envId, config }];
    const held = world.internalAccounts.currenciesOwnedBy(envId);
    const added = config.supportedCurrencies.map((c) => c.currencyCode).filter((code) => !held.has(code));
    const accounts = provisionAccounts(envId, '', added, at);
    if (accounts.length > 0) events.push({ type: 'platform.accounts.created', accounts });
    return { events, reply: () => world.envs.get(envId)! };
  },
};
