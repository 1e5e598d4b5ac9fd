// Path matching: a route path is split into segments once; a request matches the route
// with the same number of segments whose static segments all match, preferring the one
// with more static segments (`/customers/external-accounts` over `/customers/{id}`).
import type { Method, Route } from './route.js';

interface Compiled {
  route: Route;
  segments: Array<{ name: string } | string>;
  statics: number;
}

export type Match =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'wrong-method'; allowed: Method[] }
  | { kind: 'none' };

/** Request paths remembered with the route they reach (`Router.known`); past this many, no more are kept. */
const KNOWN_PATHS_CAPACITY = 512;

export class Router {
  readonly #byLength = new Map<number, Compiled[]>();
  /** `METHOD path` as sent, for routes without parameters reached by their own path: the usual request, met again and again. */
  readonly #known = new Map<string, Route>();

  constructor(readonly routes: readonly Route[]) {
    for (const route of routes) {
      const segments = route.path
        .split('/')
        .filter((s) => s !== '')
        .map((s) => (s.startsWith('{') && s.endsWith('}') ? { name: s.slice(1, -1) } : s));
      const compiled: Compiled = { route, segments, statics: segments.filter((s) => typeof s === 'string').length };
      const list = this.#byLength.get(segments.length) ?? [];
      list.push(compiled);
      list.sort((a, b) => b.statics - a.statics);
      this.#byLength.set(segments.length, list);
    }
  }

  match(method: string, parts: readonly string[]): Match {
    const candidates = this.#byLength.get(parts.length);
    if (candidates === undefined) return { kind: 'none' };
    let bestStatics = -1;
    const allowed: Method[] = [];
    for (const c of candidates) {
      if (c.statics < bestStatics) break;
      const params = matchSegments(c.segments, parts);
      if (params === undefined) continue;
      bestStatics = c.statics;
      if (c.route.method === method) return { kind: 'found', route: c.route, params };
      allowed.push(c.route.method);
    }
    return allowed.length > 0 ? { kind: 'wrong-method', allowed } : { kind: 'none' };
  }

  /**
   * The route a raw path (as sent, before splitting and decoding) reached before with
   * `method`, when it has no parameters: the same bytes reach the same route, so splitting,
   * decoding and matching are skipped. Paths with parameters are not kept (each id is
   * another path), and when the table is full no more are.
   */
  known(method: string, rawPath: string): Route | undefined {
    return this.#known.get(`${method} ${rawPath}`);
  }

  /** Keeps what `known` answers for `rawPath`, once it matched `route` without parameters. */
  remember(method: string, rawPath: string, route: Route): void {
    if (this.#known.size < KNOWN_PATHS_CAPACITY) this.#known.set(`${method} ${rawPath}`, route);
  }
}

function matchSegments(segments: Compiled['segments'], parts: readonly string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const part = parts[i]!;
    if (typeof s === 'string') {
      if (s !== part) return undefined;
    } else {
      params[s.name] = part;
    }
  }
  return params;
}
