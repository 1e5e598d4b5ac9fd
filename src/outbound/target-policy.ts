// Where the service's outbound requests may go: every URL it fetches because a platform
// configured it (webhook endpoints and test sends, OIDC key sets at jwksUri). A platform
// token sets these URLs, so without this the service would make requests into its own
// network for anyone holding one (cloud metadata at 169.254.169.254, admin ports on
// loopback, the private LAN) and report, by an answer or only by its timing, what answered.
//
// The rule: production goes only to public unicast addresses; sandbox also to loopback
// (developers run receivers on their own machine) and nothing else that is not public;
// OUTBOUND_ALLOW_PRIVATE_TARGETS=true (or its older name WEBHOOK_ALLOW_PRIVATE_TARGETS)
// lifts the rule for deployments whose receivers live on a private network. A host name is
// resolved and every address it gives must be allowed. The check is made when a URL is
// given (PATCH /config, POST /webhooks/test, for a 400 naming the field) and again on every
// connection (egress.ts), against the address actually connected to, since DNS may answer
// differently later.
//
// The URL's syntax is actors/platform.ts checkOutboundUrl (pure, in the decision); this
// module is the part that needs the network.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { checkOutboundUrl, type Environment } from '../../actors/platform.js';
import { invalidField } from '../../actors/errors.js';

/** `public`: allowed everywhere; `loopback`: in sandbox too; `non-public`: only when the operator allows private targets. */
export type AddressKind = 'public' | 'loopback' | 'non-public';

export interface AddressClass {
  kind: AddressKind;
  /** The special-purpose range the address is in (for a refusal's message); empty for public. */
  range: string;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** A host name to all its addresses; rejects when the name does not resolve. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** getaddrinfo, as a connection would: /etc/hosts included, every address, in the system's order. */
export const systemResolver: Resolver = async (hostname) => {
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** A connection the policy refused before it was made; the message says why (no resolved address in it). */
export class TargetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

/**
 * IPv4 special-purpose ranges (IANA registry, RFC 6890) that are not public unicast.
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) fall under these too: net.BlockList matches
 * an IPv4 rule against the mapped form.
 */
const IPV4_RANGES: ReadonlyArray<readonly [network: string, prefix: number, range: string]> = [
  ['0.0.0.0', 8, 'this network (0.0.0.0/8)'],
  ['10.0.0.0', 8, 'private (10.0.0.0/8)'],
  ['100.64.0.0', 10, 'shared address space (100.64.0.0/10)'],
  ['127.0.0.0', 8, 'loopback (127.0.0.0/8)'],
  ['169.254.0.0', 16, 'link-local (169.254.0.0/16)'],
  ['172.16.0.0', 12, 'private (172.16.0.0/12)'],
  ['192.0.0.0', 24, 'IETF protocol assignments (192.0.0.0/24)'],
  ['192.0.2.0', 24, 'documentation (192.0.2.0/24)'],
  ['192.88.99.0', 24, '6to4 relay anycast (192.88.99.0/24)'],
  ['192.168.0.0', 16, 'private (192.168.0.0/16)'],
  ['198.18.0.0', 15, 'benchmarking (198.18.0.0/15)'],
  ['198.51.100.0', 24, 'documentation (198.51.100.0/24)'],
  ['203.0.113.0', 24, 'documentation (203.0.113.0/24)'],
  ['224.0.0.0', 4, 'multicast (224.0.0.0/4)'],
  ['240.0.0.0', 4, 'reserved (240.0.0.0/4, broadcast included)'],
];

/** IPv6 special-purpose ranges; what lies outside 2000::/3 and these is caught after them. */
const IPV6_RANGES: ReadonlyArray<readonly [network: string, prefix: number, range: string]> = [
  ['::', 128, 'unspecified (::)'],
  ['::1', 128, 'loopback (::1)'],
  ['64:ff9b:1::', 48, 'local-use NAT64 (64:ff9b:1::/48)'],
  ['100::', 64, 'discard-only (100::/64)'],
  ['2001::', 23, 'IETF protocol assignments, Teredo included (2001::/23)'],
  ['2001:db8::', 32, 'documentation (2001:db8::/32)'],
  ['3fff::', 20, 'documentation (3fff::/20)'],
  ['fc00::', 7, 'unique local (fc00::/7)'],
  ['fe80::', 10, 'link-local (fe80::/10)'],
  ['fec0::', 10, 'site-local (fec0::/10)'],
  ['ff00::', 8, 'multicast (ff00::/8)'],
];

interface Range {
  list: BlockList;
  kind: AddressKind;
  range: string;
}

function rangeOf(rules: ReadonlyArray<readonly [network: string, prefix: number, family: 'ipv4' | 'ipv6']>, kind: AddressKind, range: string): Range {
  const list = new BlockList();
  for (const [network, prefix, family] of rules) list.addSubnet(network, prefix, family);
  return { list, kind, range };
}

/** 2002:AABB:CCDD:: for a.b.c.d: where 6to4 (RFC 3056) carries the IPv4 address. */
function sixToFour(ipv4: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = ipv4.split('.').map(Number);
  return `2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::`;
}

/**
 * Every range, in the order they are tried. An IPv4 range covers its IPv4-mapped form (via
 * BlockList), its NAT64 form under the well-known prefix 64:ff9b::/96 (RFC 6052) and its
 * 6to4 form under 2002::/16: each reaches the embedded IPv4 address. The translated forms
 * of loopback are not loopback of this machine, so they count as non-public.
 */
const RANGES: readonly Range[] = [
  ...IPV4_RANGES.map(([network, prefix, range]) =>
    rangeOf([[network, prefix, 'ipv4']], range.startsWith('loopback') ? 'loopback' : 'non-public', range),
  ),
  ...IPV4_RANGES.map(([network, prefix, range]) =>
    rangeOf(
      [
        [`64:ff9b::${network}`, 96 + prefix, 'ipv6'],
        [sixToFour(network), 16 + prefix, 'ipv6'],
      ],
      'non-public',
      `an IPv6 form (NAT64 or 6to4) of ${range}`,
    ),
  ),
  ...IPV6_RANGES.map(([network, prefix, range]) => rangeOf([[network, prefix, 'ipv6']], range.startsWith('loopback') ? 'loopback' : 'non-public', range)),
];

/** IPv6 global unicast, plus the mapped and NAT64 prefixes whose embedded IPv4 address decided above. */
const GLOBAL_IPV6 = rangeOf(
  [
    ['2000::', 3, 'ipv6'],
    ['::ffff:0:0', 96, 'ipv6'],
    ['64:ff9b::', 96, 'ipv6'],
  ],
  'public',
  '',
);

/** An IP address without the brackets a URL puts around IPv6 or the zone a scoped one carries. */
export function bareAddress(host: string): string {
  const unbracketed = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = unbracketed.indexOf('%');
  return zone < 0 ? unbracketed : unbracketed.slice(0, zone);
}

/** Which kind of address `address` (an IPv4 or IPv6 literal, brackets and zone allowed) is; throws for anything else. */
export function classifyAddress(address: string): AddressClass {
  const bare = bareAddress(address);
  const family = isIP(bare);
  if (family === 0) throw new TypeError(`not an IP address: ${address}`);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const range of RANGES) {
    if (range.list.check(bare, type)) return { kind: range.kind, range: range.range };
  }
  // BlockList matches IPv6 rules against an IPv4 address's mapped form, so only IPv6 asks.
  if (family === 6 && !GLOBAL_IPV6.list.check(bare, type)) return { kind: 'non-public', range: 'not global unicast (outside 2000::/3)' };
  return { kind: 'public', range: '' };
}

export interface TargetPolicyOptions {
  /** OUTBOUND_ALLOW_PRIVATE_TARGETS: every address is allowed. */
  allowPrivate?: boolean;
  /** How host names are resolved, at check time and for every connection; tests fake DNS here. */
  resolver?: Resolver;
}

/** How long a request's check waits for DNS before taking the name as unresolved. */
export const RESOLVE_TIMEOUT_MS = 5_000;

export class TargetPolicy {
  readonly allowPrivate: boolean;
  readonly #resolver: Resolver;

  constructor(options: TargetPolicyOptions = {}) {
    this.allowPrivate = options.allowPrivate ?? false;
    this.#resolver = options.resolver ?? systemResolver;
  }

  /** Why `environment` may not send to `address` (an IP literal), or undefined when it may. */
  refusal(environment: Environment, address: string): string | undefined {
    if (this.allowPrivate) return undefined;
    const { kind, range } = classifyAddress(address);
    if (kind === 'public' || (kind === 'loopback' && environment === 'sandbox')) return undefined;
    return environment === 'sandbox' ? `${range}; sandbox requests go to public or loopback addresses only` : `${range}; requests go to public addresses only`;
  }

  /**
   * The addresses a connection from `environment` to `hostname` may use: all of them, or
   * a TargetRefusedError when any one is refused (a name that also points inward is not
   * used at all, whichever address a connection would pick). DNS failures reject as they are.
   */
  async resolve(environment: Environment, hostname: string): Promise<ResolvedAddress[]> {
    const addresses = await this.#resolver(hostname);
    if (addresses.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
    for (const { address } of addresses) {
      const why = this.refusal(environment, address);
      if (why !== undefined) throw new TargetRefusedError(`${hostname} resolves to ${why}`);
    }
    return addresses;
  }

  /**
   * Checks a URL given in a request (field `field`): its syntax, then where it leads,
   * throwing a 400 naming the field. A name that does not resolve now (or not within the
   * timeout) is accepted: an endpoint may be configured before its DNS record exists, and
   * every connection is checked again when it is made.
   */
  async check(environment: Environment, field: string, value: string): Promise<void> {
    const url = checkOutboundUrl(field, value);
    if (this.allowPrivate) return;
    const host = bareAddress(url.hostname);
    if (isIP(host) !== 0) {
      const why = this.refusal(environment, host);
      if (why !== undefined) throw invalidField(field, `${url.hostname} is ${why}`);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RESOLVE_TIMEOUT_MS);
    });
    try {
      // Allowed, or no answer in time (then it is checked at every connection, as above).
      await Promise.race([this.resolve(environment, host), timedOut]);
    } catch (err) {
      if (err instanceof TargetRefusedError) throw invalidField(field, err.message);
      // Not resolvable now: see above.
    } finally {
      clearTimeout(timer);
    }
  }
}
