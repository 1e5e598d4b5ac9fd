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

export class Router {
  readonly #byLength = new Map<number, Compiled[]>();
  /** `METHOD path` of every route without parameters, as its path is written: the usual request, met again and again. */
  readonly #exact = new Map<string, Route>();

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
      // Static segments outrank parameters in `match`, so a parameterless route's own path reaches it.
      if (compiled.statics === segments.length) this.#exact.set(`${route.method} ${route.path}`, route);
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
   * The route without parameters whose path is exactly `path` (without the version, not
   * decoded), as `match` would find it: the usual request skips splitting, decoding and
   * matching. Any other spelling, and every path with parameters, goes through `match`.
   */
  exact(method: string, path: string): Route | undefined {
    return this.#exact.get(`${method} ${path}`);
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
