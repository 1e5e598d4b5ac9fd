// The dashboard's only way out: the service's own public API, with the platform token the
// user signed in with. The token lives in sessionStorage (gone with the tab), never in a
// URL or a cookie.

const API = '/2025-10-13';
const TOKEN_KEY = 'dashboard.token';

export interface Token {
  tokenId: string;
  clientSecret: string;
}

export type Environment = 'sandbox' | 'production';

export interface FieldProblem {
  field: string;
  message: string;
}

/** An error the API answered: its code, message, the fields it names and the request's id. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: readonly FieldProblem[],
    readonly requestId: string,
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

export function savedToken(): Token | undefined {
  const raw = sessionStorage.getItem(TOKEN_KEY);
  if (raw === null) return undefined;
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { tokenId, clientSecret } = parsed as Record<string, unknown>;
  return typeof tokenId === 'string' && typeof clientSecret === 'string' ? { tokenId, clientSecret } : undefined;
}

export function saveToken(token: Token): void {
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify(token));
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Which environment a token reaches: the service issues sandbox tokens as `tok_sbx_…`, production ones as `tok_prd_…`. */
export function environmentOf(token: Token): Environment {
  return token.tokenId.startsWith('tok_sbx_') ? 'sandbox' : 'production';
}

/**
 * Calls the API with `token`; a non-2xx answer is thrown as ApiError. `extraHeaders` are for
 * the few requests that carry one (a passkey verify's Request-Id).
 */
export async function call<T>(token: Token, method: string, path: string, body?: unknown, extraHeaders: Readonly<Record<string, string>> = {}): Promise<T> {
  const headers: Record<string, string> = { ...extraHeaders, authorization: `Basic ${btoa(`${token.tokenId}:${token.clientSecret}`)}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  // No cookies are used; and without credentials mode a 401's Basic challenge cannot make
  // the browser prompt for a password (Fetch: only a request that includes credentials does).
  const res = await fetch(`${API}${path}`, { method, headers, credentials: 'omit', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  const parsed: unknown = text === '' ? undefined : JSON.parse(text);
  if (!res.ok) {
    const error = (parsed ?? {}) as { code?: string; message?: string; details?: FieldProblem[]; requestId?: string };
    throw new ApiError(res.status, error.code ?? 'UNKNOWN', error.message ?? `HTTP ${res.status}`, error.details ?? [], error.requestId ?? res.headers.get('x-request-id') ?? '');
  }
  return parsed as T;
}

/** An error as the page says it: the API's message, its code and the request's id. */
export function describe(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code}${err.requestId === '' ? '' : `, request ${err.requestId}`})`;
  return err instanceof Error ? err.message : String(err);
}
