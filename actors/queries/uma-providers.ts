// GET /uma-providers (CONTRACT.md "Today's clients, second wave"): the UMA providers an
// environment's senders can pay, from what the service itself resolves (lookup.ts
// resolveUmaReceiver): its own domain, the environment's umaDomain, whose receivers are its
// customers; and in the sandbox the test addresses' domain with the currencies they
// receive. The service keeps no allowlist, so no provider is blocked.
import { SANDBOX_TEST_RECEIVERS } from '../lookup.js';
import { paginate, type Page, type PageRequest } from '../page.js';
import { SANDBOX_UMA_DOMAIN, type PlatformEnv } from '../platform.js';
import { currencyObject, regionsOf, type Currency } from '../reference.js';
import type { DomainQuery } from '../world.js';

/** The vendor's UmaProvider, as far as the service knows one (no logo, no LEI). */
export interface UmaProvider {
  name: string;
  domain: string;
  supportedRegions: string[];
  supportedCurrencies: Currency[];
  allowListStatus: boolean;
}

export interface UmaProviderFilter {
  countryCode?: string;
  currencyCode?: string;
  /** false: only providers on the allowlist (all of them: none is blocked). */
  hasBlockedProviders?: boolean;
  sortOrder?: 'asc' | 'desc';
}

/** A provider receiving `codes`, in the regions whose currency is among them. */
function provider(name: string, domain: string, codes: readonly string[]): UmaProvider {
  return { name, domain, supportedRegions: regionsOf(codes), supportedCurrencies: codes.map(currencyObject), allowListStatus: true };
}

/**
 * The environment's providers by domain. The sandbox's own domain is by default the test
 * addresses' (CONTRACT.md): one provider then, receiving what either does.
 */
function providersOf(env: PlatformEnv): Map<string, UmaProvider> {
  const own = env.config.umaDomain;
  const ownCodes = env.config.supportedCurrencies.map((c) => c.currencyCode);
  const providers = new Map<string, UmaProvider>([[own, provider(own, own, ownCodes)]]);
  if (env.environment !== 'sandbox') return providers;
  const testCodes = [...new Set([...SANDBOX_TEST_RECEIVERS.values()].map((receiver) => receiver.currency))];
  if (own === SANDBOX_UMA_DOMAIN) {
    providers.set(own, provider(own, own, [...new Set([...ownCodes, ...testCodes])]));
  } else {
    providers.set(SANDBOX_UMA_DOMAIN, provider('Sandbox test addresses', SANDBOX_UMA_DOMAIN, testCodes));
  }
  return providers;
}

/** One page of the environment's UMA providers by domain: descending unless sortOrder is asc (the vendor's default). */
export const umaProviderPage: DomainQuery<{ envId: string; filter: UmaProviderFilter; page: PageRequest }, Page<UmaProvider>> = ({ envId, filter, page }, world) => {
  const providers = providersOf(world.envs.get(envId)!);
  const matches = (p: UmaProvider): boolean =>
    (filter.countryCode === undefined || p.supportedRegions.includes(filter.countryCode)) &&
    (filter.currencyCode === undefined || p.supportedCurrencies.some((c) => c.code === filter.currencyCode)) &&
    (filter.hasBlockedProviders !== false || p.allowListStatus);
  const domains = [...providers.keys()].sort();
  return paginate(domains, page, (domain) => (matches(providers.get(domain)!) ? providers.get(domain)! : undefined), (p) => p, filter.sortOrder ?? 'desc');
};
