// Shared assertions and fixtures for the HTTP suites: the error body of CONTRACT.md, the
// list envelope, and valid request bodies that individual tests vary one field at a time.
import assert from 'node:assert/strict';
import type { RequestOptions, Response, TestService } from './service.js';
import { World } from '../../actors/world.js';

export type Auth = NonNullable<RequestOptions['auth']>;

export interface ErrorBody {
  status: number;
  code: string;
  message: string;
  reason?: string;
  details?: unknown;
  requestId?: string;
}

export const ID_RE = (kind: string): RegExp => new RegExp(`^${kind}:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`);
export const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** A well-formed id (UUIDv7 shape) that no service ever issued. */
export function absentId(kind: string): string {
  return `${kind}:01900000-0000-7000-8000-000000000000`;
}

/** The field paths an error's `details` names (an array of {field} or one {field} object). */
export function fieldsOf(details: unknown): string[] {
  if (Array.isArray(details)) {
    return details.flatMap((d) => (typeof d === 'object' && d !== null && typeof (d as { field?: unknown }).field === 'string' ? [(d as { field: string }).field] : []));
  }
  if (typeof details === 'object' && details !== null && typeof (details as { field?: unknown }).field === 'string') {
    return [(details as { field: string }).field];
  }
  return [];
}

/**
 * The response is the error of CONTRACT.md: status line and body `status` agree, `code`
 * and a non-empty `message` are set, and `details` names every field in `fields`.
 */
export function assertError(res: Response, status: number, code: string, fields?: readonly string[]): ErrorBody {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = res.body as ErrorBody;
  assert.equal(typeof body, 'object', res.text);
  assert.equal(body.status, status, res.text);
  assert.equal(body.code, code, res.text);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0, 'message must not be empty');
  assert.equal(body.requestId, res.headers.get('x-request-id'), 'the error names its request as X-Request-Id does');
  if (fields !== undefined) {
    const named = fieldsOf(body.details);
    for (const field of fields) {
      assert.ok(named.includes(field), `expected details to name ${field}, got ${JSON.stringify(body.details)}`);
    }
  }
  return body;
}

/** 400 INVALID_INPUT naming `field`. */
export function assertInvalid(res: Response, field: string): ErrorBody {
  return assertError(res, 400, 'INVALID_INPUT', [field]);
}

export function assertStatus(res: Response, status: number): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
}

/** The list envelope of SERVICE_SPEC part 2. */
export function assertEnvelope(body: unknown): asserts body is { data: any[]; hasMore: boolean; nextCursor?: string; totalCount: number } {
  const b = body as Record<string, unknown>;
  assert.ok(Array.isArray(b.data), 'data must be an array');
  assert.equal(typeof b.hasMore, 'boolean');
  assert.equal(typeof b.totalCount, 'number');
  if (b.hasMore === true) assert.equal(typeof b.nextCursor, 'string');
  else assert.equal(b.nextCursor, undefined, 'nextCursor only when hasMore');
}

/** Follows nextCursor from the first page and returns every item, in the order served. */
export async function walk(svc: TestService, path: string, limit: number, auth: Auth = 'sandbox'): Promise<{ items: any[]; pages: number; totalCounts: number[] }> {
  const items: any[] = [];
  const totalCounts: number[] = [];
  let cursor: string | undefined;
  let pages = 0;
  const sep = path.includes('?') ? '&' : '?';
  for (;;) {
    const url = `${path}${sep}limit=${limit}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const res = await svc.request('GET', url, { auth });
    assertStatus(res, 200);
    assertEnvelope(res.body);
    pages++;
    assert.ok(res.body.data.length <= limit, `page of ${res.body.data.length} exceeds limit ${limit}`);
    items.push(...res.body.data);
    totalCounts.push(res.body.totalCount);
    if (!res.body.hasMore) break;
    assert.equal(res.body.data.length, limit, 'a page followed by more must be full');
    cursor = res.body.nextCursor;
    assert.ok(pages < 1000, 'pagination does not terminate');
  }
  return { items, pages, totalCounts };
}

export async function totalCount(svc: TestService, path: string, auth: Auth = 'sandbox'): Promise<number> {
  const res = await svc.request('GET', path, { auth });
  assertStatus(res, 200);
  assertEnvelope(res.body);
  return res.body.totalCount;
}

/** The body text of a GET, for "nothing changed" comparisons. */
export async function read(svc: TestService, path: string, auth: Auth = 'sandbox'): Promise<string> {
  const res = await svc.request('GET', path, { auth });
  assertStatus(res, 200);
  return res.text;
}

let counter = 0;
/** A unique token for this process, for platformCustomerIds and UMA addresses. */
export function unique(prefix = 't'): string {
  counter++;
  return `${prefix}${process.pid.toString(36)}${Date.now().toString(36)}${counter}`;
}

export async function createCustomer(svc: TestService, body: Record<string, unknown> = {}, auth: Auth = 'sandbox'): Promise<any> {
  const res = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', ...body }, auth });
  assertStatus(res, 201);
  return res.body;
}

export async function customerAccounts(svc: TestService, customerId: string, auth: Auth = 'sandbox'): Promise<any[]> {
  const res = await svc.request('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}&limit=100`, { auth });
  assertStatus(res, 200);
  return res.body.data;
}

export function supportedCurrency(code: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    currencyCode: code,
    minAmount: 1,
    maxAmount: 100_000_000,
    enabledTransactionTypes: ['OUTGOING', 'INCOMING'],
    requiredCounterpartyFields: [],
    providerRequiredCustomerFields: [],
    providerRequiredCounterpartyCustomerFields: [],
    ...over,
  };
}

/** Sets the environment's supported currencies (the default set is USD, USDC, USDB). */
export async function setCurrencies(svc: TestService, codes: readonly string[], auth: Auth = 'sandbox'): Promise<any> {
  const res = await svc.request('PATCH', '/config', { body: { supportedCurrencies: codes.map((c) => supportedCurrency(c)) }, auth });
  assertStatus(res, 200);
  assert.deepEqual(
    res.body.supportedCurrencies.map((s: { currencyCode: string }) => s.currencyCode),
    [...codes],
  );
  return res.body;
}

export const DEFAULT_CURRENCIES = ['USD', 'USDC', 'USDB'] as const;

// --- valid external accounts, one per accountInfo variant ---------------------------------

export const SPARK_MAINNET_ADDRESS = 'sp1pgss9fsgd8cdhncacevunnkt47q9qy67485vm3y8q5l3m35gp9yac6zvd6zpha';
export const BOLT11_MAINNET =
  'lnbc2500u1pvjluezsp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpu9qrsgquk0rl77nj30yxdy8j9vdx85fkpmdla2087ne0xh8nhedh8w27kyke0lp53ut353s06fv3qfegext0eh0ymjpf39tuven09sam30g4vgpfna3rh';
export const EIP55_ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
export const SOLANA_ADDRESS = 'So11111111111111111111111111111111111111112';

/** USD_ACCOUNT, US_ACCOUNT, CLABE and IBAN accounts require the beneficiary's type and name. */
export const BENEFICIARY = { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace' };

export interface AccountFixture {
  name: string;
  currency: string;
  accountInfo: Record<string, unknown>;
  cryptoNetwork?: string;
  /** What beneficiary verification answers in sandbox. */
  verification: string;
}

export const ACCOUNT_FIXTURES: readonly AccountFixture[] = [
  {
    name: 'USD_ACCOUNT',
    currency: 'USD',
    accountInfo: {
      accountType: 'USD_ACCOUNT',
      accountNumber: '123456789',
      routingNumber: '021000021',
      bankAccountType: 'CHECKING',
      bankName: 'Chase',
      beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace', birthDate: '1990-12-10', nationality: 'US' },
    },
    verification: 'MATCHED',
  },
  {
    name: 'US_ACCOUNT',
    currency: 'USD',
    accountInfo: { accountType: 'US_ACCOUNT', accountNumber: '987654321', routingNumber: '011000015', accountCategory: 'SAVINGS', bankName: 'BoA', beneficiary: BENEFICIARY },
    verification: 'MATCHED',
  },
  {
    name: 'BRL_ACCOUNT',
    currency: 'BRL',
    accountInfo: { accountType: 'BRL_ACCOUNT', pixKey: '52998224725', pixKeyType: 'CPF', taxId: '52998224725' },
    verification: 'MATCHED',
  },
  {
    name: 'AED_ACCOUNT',
    currency: 'AED',
    accountInfo: { accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456', swiftCode: 'NBADAEAA' },
    verification: 'MATCHED',
  },
  { name: 'CLABE', currency: 'MXN', accountInfo: { accountType: 'CLABE', clabe: '032180000118359719', bankName: 'BBVA', beneficiary: BENEFICIARY }, verification: 'MATCHED' },
  { name: 'IBAN', currency: 'EUR', accountInfo: { accountType: 'IBAN', iban: 'DE89370400440532013000', swiftCode: 'COBADEFF', beneficiary: BENEFICIARY }, verification: 'MATCHED' },
  { name: 'UPI', currency: 'INR', accountInfo: { accountType: 'UPI', vpa: 'ada.lovelace@okaxis' }, verification: 'MATCHED' },
  {
    name: 'SPARK_WALLET',
    currency: 'USDB',
    accountInfo: { accountType: 'SPARK_WALLET', address: SPARK_MAINNET_ADDRESS },
    cryptoNetwork: 'SPARK_MAINNET',
    verification: 'UNSUPPORTED',
  },
  {
    name: 'LIGHTNING (address)',
    currency: 'BTC',
    accountInfo: { accountType: 'LIGHTNING', address: 'ada@getalby.com' },
    cryptoNetwork: 'LIGHTNING_MAINNET',
    verification: 'UNSUPPORTED',
  },
  {
    name: 'LIGHTNING (BOLT11)',
    currency: 'BTC',
    accountInfo: { accountType: 'LIGHTNING', address: BOLT11_MAINNET },
    cryptoNetwork: 'LIGHTNING_MAINNET',
    verification: 'UNSUPPORTED',
  },
  {
    name: 'SOLANA_WALLET',
    currency: 'USDC',
    accountInfo: { accountType: 'SOLANA_WALLET', address: SOLANA_ADDRESS },
    cryptoNetwork: 'SOLANA_MAINNET',
    verification: 'UNSUPPORTED',
  },
  {
    name: 'ETHEREUM_WALLET',
    currency: 'USDC',
    accountInfo: { accountType: 'ETHEREUM_WALLET', address: EIP55_ADDRESS },
    cryptoNetwork: 'ETHEREUM_MAINNET',
    verification: 'UNSUPPORTED',
  },
  {
    name: 'BASE_WALLET',
    currency: 'USDC',
    accountInfo: { accountType: 'BASE_WALLET', address: EIP55_ADDRESS.toLowerCase() },
    cryptoNetwork: 'BASE_TESTNET',
    verification: 'UNSUPPORTED',
  },
];

/** A USD_ACCOUNT body; `accountNumber` picks the sandbox suffix. */
export function usdAccount(accountNumber = '123456789', over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    currency: 'USD',
    accountInfo: { accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', bankAccountType: 'CHECKING', beneficiary: BENEFICIARY },
    ...over,
  };
}

/** `n` characters of text: a field's value at or past its length limit. */
export const longText = (n: number): string => 'x'.repeat(n);

/** Resolves after `ms` without keeping the process alive; for deadlines, never for ordering. */
export function deadline(ms: number): Promise<'deadline'> {
  return new Promise((resolve) => setTimeout(() => resolve('deadline'), ms).unref());
}

// A valid CLABE whose last 3 digits (the last one being the check digit) are `suffix`:
// digit 13 has weight 7, coprime with 10, so one of its ten values gives the check digit.
export function clabeEndingWith(suffix: string): string {
  const w = [3, 7, 1];
  for (let d = 0; d <= 9; d++) {
    const first17 = `0321800001183${d}0${suffix.slice(0, 2)}`;
    const sum = [...first17].reduce((s, c, i) => s + ((Number(c) * w[i % 3]!) % 10), 0);
    if (String((10 - (sum % 10)) % 10) === suffix[2]) return first17 + suffix[2];
  }
  throw new Error('unreachable: weight 7 reaches every residue');
}

// --- what the engine is asked to hold --------------------------------------------------

/**
 * The actors each decision taken during `during` held, as the world is told when it applies
 * the decision (the holding check's own hook, so it sees every path into the engine: exec,
 * run, timers; once per decision, also one that waited for its actors and named them again).
 */
export async function heldActors(svc: TestService, during: () => Promise<unknown>): Promise<string[][]> {
  const world = svc.service.services.world;
  const calls: string[][] = [];
  world.hold = (actors, checked) => {
    if (actors !== undefined && checked === 'writes') calls.push([...actors]);
    World.prototype.hold.call(world, actors, checked);
  };
  try {
    await during();
  } finally {
    delete (world as Partial<Pick<World, 'hold'>>).hold;
  }
  return calls;
}

/** The id of an environment actor of the test service's default platform. */
export function envActor(svc: TestService, environment: 'sandbox' | 'production' = 'sandbox'): string {
  return `${svc.credentials.platformId}#${environment}`;
}
