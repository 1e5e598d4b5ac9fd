// What text and numbers the API refuses (docs/api.md "Errors"): a string a request carries
// holds no control character (C0, DEL, C1: NUL, tab and line breaks among them), no line or
// paragraph separator and no bidirectional control (U+202E and its kin); a count or an
// amount is an integer no larger than 2^53 - 1, the largest JSON.parse keeps exactly. Each
// is a 400 naming the field, and nothing is created or changed.
//
// Two halves: every string and number of every request the OpenAPI document publishes is
// held to the rule (walked from the document, so a field added later cannot be missed),
// and a table across the route families shows what a client sees.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { routes } from '../src/http/routes/index.js';
import { openApiDocument } from '../src/http/openapi.js';
import { serviceForSuite, type TestService } from './support/service.js';
import { ACCOUNT_FIXTURES, assertInvalid, assertStatus, createCustomer, totalCount, unique } from './support/assertions.js';
import { externalUsd, fundedCustomer, getJson, quoteBody } from './support/money.js';

type Json = { [key: string]: unknown };

/** Code points no request string may hold: ranges, inclusive. */
const FORBIDDEN: ReadonlyArray<readonly [number, number]> = [
  [0x0000, 0x001f],
  [0x007f, 0x009f],
  [0x061c, 0x061c],
  [0x200e, 0x200f],
  [0x2028, 0x2029],
  [0x202a, 0x202e],
  [0x2066, 0x2069],
];
const forbiddenCharacter = fc.oneof(...FORBIDDEN.map(([from, to]) => fc.integer({ min: from, max: to }))).map((code) => String.fromCharCode(code));

// ---------------------------------------------------------------------------------------
// The published requests, walked

/** Keywords that only describe or bound a node: nothing beneath them to walk. */
const LEAF_KEYWORDS = new Set([
  'type', 'description', 'default', 'title', 'examples', 'pattern', 'format', 'minLength', 'maxLength', 'enum', 'const',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'required',
]);

interface Found {
  /** Strings a request may carry (values, and the names of a map's properties), by where they are. */
  strings: Map<string, Json>;
  /** Integers and numbers a request may carry. */
  numbers: Map<string, Json>;
}

function resolve(doc: Json, ref: string): Json {
  let node: unknown = doc;
  for (const part of ref.slice(2).split('/')) node = (node as Json | undefined)?.[part];
  assert.ok(node !== null && typeof node === 'object', `${ref} resolves`);
  return node as Json;
}

/**
 * Every string and number node under `node`, following references. A keyword the walk does
 * not know fails the test: a new way of nesting (oneOf, prefixItems) must be walked too.
 */
function walk(doc: Json, node: Json, where: string, found: Found, seen: ReadonlySet<string> = new Set()): void {
  for (const [keyword, value] of Object.entries(node)) {
    switch (keyword) {
      case '$ref': {
        const ref = value as string;
        if (!seen.has(ref)) walk(doc, resolve(doc, ref), where, found, new Set([...seen, ref]));
        break;
      }
      case 'properties':
        for (const [name, sub] of Object.entries(value as Record<string, Json>)) walk(doc, sub, `${where}.${name}`, found, seen);
        break;
      case 'items':
        walk(doc, value as Json, `${where}.0`, found, seen);
        break;
      case 'anyOf':
        (value as Json[]).forEach((branch, i) => walk(doc, branch, `${where}|${i}`, found, seen));
        break;
      case 'patternProperties':
        for (const [names, sub] of Object.entries(value as Record<string, Json>)) {
          found.strings.set(`${where}{names}`, { type: 'string', pattern: names });
          walk(doc, sub, `${where}.*`, found, seen);
        }
        break;
      case 'additionalProperties':
        if (value !== false) walk(doc, value as Json, `${where}.*`, found, seen);
        break;
      default:
        assert.ok(LEAF_KEYWORDS.has(keyword), `${where}: the walk does not know the keyword ${keyword}`);
    }
  }
  if (node.type === 'string') found.strings.set(where, node);
  // A map's names are stored: a name outside its pattern must be refused, not let through.
  if (node.patternProperties !== undefined && node.additionalProperties !== false) found.strings.set(`${where}{other names}`, { type: 'string' });
  if (node.type === 'integer' || node.type === 'number') found.numbers.set(where, node);
}

/** Every request body and query parameter of the document. */
function requestNodes(): Found {
  const doc = openApiDocument(routes, 'http://localhost') as unknown as Json & { paths: Record<string, Record<string, Json>> };
  const found: Found = { strings: new Map(), numbers: new Map() };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      const body = (op.requestBody as { content: Record<string, { schema: Json }> } | undefined)?.content['application/json']?.schema;
      if (body !== undefined) walk(doc, body, `${where} body`, found);
      // Path parameters are ids and UMA addresses, each parsed by its route with a pattern
      // of letters and digits (IdOf, UmaAddress); the table below sends one a NUL.
      for (const parameter of op.parameters as Json[]) if (parameter.in === 'query') walk(doc, parameter.schema as Json, `${where} ?${String(parameter.name)}`, found);
    }
  }
  return found;
}

/** Whether the string node refuses `text` as JSON Schema reads it (typebox compiles the same RegExp). */
function refuses(node: Json, text: string): boolean {
  if (Array.isArray(node.enum)) return !node.enum.includes(text);
  if (node.const !== undefined) return node.const !== text;
  return typeof node.pattern === 'string' && !new RegExp(node.pattern).test(text);
}

describe('every request the OpenAPI document publishes', () => {
  const found = requestNodes();

  it('is walked whole: the free-text fields of each route family are among the strings found', () => {
    for (const where of [
      'POST /2025-10-13/customers body.fullName',
      'POST /2025-10-13/customers body.platformCustomerId',
      'POST /2025-10-13/customers body.address.line1',
      'POST /2025-10-13/customers body.businessInfo.legalName',
      'PATCH /2025-10-13/customers/{customerId} body.businessInfo.doingBusinessAs',
      'POST /2025-10-13/customers/external-accounts body.accountInfo|0.bankName',
      'POST /2025-10-13/customers/external-accounts body.accountInfo|0.beneficiary.fullName',
      'POST /2025-10-13/platform/external-accounts body.platformAccountId',
      'POST /2025-10-13/quotes body.description',
      'POST /2025-10-13/quotes body.senderCustomerInfo{names}',
      'POST /2025-10-13/transfer-out body.remittanceInformation',
      'PATCH /2025-10-13/config body.embeddedWalletConfig.appName',
      'POST /2025-10-13/auth/credentials body.nickname',
      'POST /2025-10-13/verifications body.beneficialOwners.0.personalInfo.firstName',
      'GET /2025-10-13/customers ?platformCustomerId',
      'GET /2025-10-13/transactions ?reference',
    ]) {
      assert.ok(found.strings.has(where), `${where} is found (found: ${[...found.strings.keys()].slice(0, 5).join(', ')}, ...)`);
    }
    assert.ok(found.numbers.has('POST /2025-10-13/customers body.businessInfo.expectedMonthlyTransactionCount|1'));
  });

  it('refuses a control or bidirectional character anywhere in any string, whatever surrounds it', () => {
    const admitting: string[] = [];
    for (const [where, node] of found.strings) {
      const property = fc.property(fc.string(), forbiddenCharacter, fc.string(), (before, character, after) => refuses(node, before + character + after));
      const result = fc.check(property, { numRuns: 200 });
      if (result.failed) admitting.push(`${where} admits ${JSON.stringify(result.counterexample)}`);
    }
    assert.deepEqual(admitting, []);
  });

  it('takes no integer past 2^53 - 1: every number has a maximum, and a minimum, within it', () => {
    const unbounded: string[] = [];
    for (const [where, node] of found.numbers) {
      const maximum = typeof node.maximum === 'number' ? node.maximum : Infinity;
      const minimum = typeof node.minimum === 'number' ? node.minimum : -Infinity;
      if (maximum > Number.MAX_SAFE_INTEGER || minimum < -Number.MAX_SAFE_INTEGER) unbounded.push(`${where}: ${JSON.stringify(node)}`);
    }
    assert.deepEqual(unbounded, []);
  });
});

// ---------------------------------------------------------------------------------------
// As a client sees it

/** NUL, RIGHT-TO-LEFT OVERRIDE, a line break, and a C1 control (CSI). */
const REFUSED = ['\u0000', '\u202e', '\n', '\u009b'] as const;

interface Row {
  name: string;
  /** The field the 400 names. */
  field: string;
  /** The request, with `value` in the field. */
  request(value: string): { method: string; path: string; body?: unknown };
  /** What the request must leave as it was. */
  state(): Promise<unknown>;
}

describe('a control or bidirectional character, or too large an integer, sent to the service', () => {
  let rows: Row[];
  let business: any;
  const svc = serviceForSuite();
  before(async () => {
    rows = await tableOf(svc);
    business = await createCustomer(svc, { customerType: 'BUSINESS', businessInfo: businessInfo() });
  });

  it('is 400 naming the field, in every route family, and creates or changes nothing', async () => {
    for (const row of rows) {
      const before = await row.state();
      for (const character of REFUSED) {
        const { method, path, body } = row.request(`Ada${character}Lovelace`);
        const res = await svc.request(method, path, body === undefined ? {} : { body });
        const error = assertInvalid(res, row.field);
        assert.match(error.message, /control characters .* bidirectional-override/, `${row.name}: the message says what is wrong`);
      }
      assert.deepEqual(await row.state(), before, `${row.name}: nothing changed`);
    }
  });

  it('accepts text from any script, punctuation and spaces included', async () => {
    const name = 'Zoë Ångström-Øvergaard, 東京 «ok» — שלום مرحبا';
    const customer = await createCustomer(svc, { fullName: name, address: { line1: name, country: 'US' } });
    assert.equal(customer.fullName, name);
    assert.equal(customer.address.line1, name);
  });

  it('is 400 naming the field for a count or a volume past 2^53 - 1, on create and on update', async () => {
    const customers = await totalCount(svc, '/customers');
    const stored = await getJson(svc, `/customers/${business.id}`);
    const info = JSON.stringify(businessInfo());
    for (const [field, number] of [
      ['expectedMonthlyTransactionCount', '9007199254740993'],
      ['expectedMonthlyTransactionCount', '9007199254740992'],
      ['expectedMonthlyTransactionVolume', '1e300'],
    ] as const) {
      const created = await svc.request('POST', '/customers', {
        raw: `{"customerType":"BUSINESS","businessInfo":${info.slice(0, -1)},"${field}":${number}}}`,
        headers: { 'content-type': 'application/json', 'idempotency-key': unique('big-') },
      });
      const error = assertInvalid(created, `businessInfo.${field}`);
      assert.match(error.message, /9007199254740991/);
      const updated = await svc.request('PATCH', `/customers/${business.id}`, {
        raw: `{"customerType":"BUSINESS","businessInfo":{"${field}":${number}}}`,
        headers: { 'content-type': 'application/json' },
      });
      assertInvalid(updated, `businessInfo.${field}`);
    }
    assert.equal(await totalCount(svc, '/customers'), customers);
    assert.deepEqual(await getJson(svc, `/customers/${business.id}`), stored);
    const largest = await svc.request('POST', '/customers', {
      raw: `{"customerType":"BUSINESS","businessInfo":${info.slice(0, -1)},"expectedMonthlyTransactionCount":9007199254740991}}`,
      headers: { 'content-type': 'application/json' },
    });
    assertStatus(largest, 201);
    assert.equal(largest.body.businessInfo.expectedMonthlyTransactionCount, Number.MAX_SAFE_INTEGER);
  });

  it('in a path parameter is 400 naming the parameter', async () => {
    assertInvalid(await svc.request('GET', '/customers/Customer:%00'), 'customerId');
    assertInvalid(await svc.request('GET', '/quotes/Quote:%E2%80%AE'), 'quoteId');
  });
});

function businessInfo(): Record<string, unknown> {
  return { legalName: 'Acme Ltd', country: 'US', taxId: '12-3456789', incorporatedOn: '2020-01-02' };
}

/** One row per free-text field of each route family; `state` is what a refused request must leave alone. */
async function tableOf(svc: TestService): Promise<Row[]> {
  const { customer, usd } = await fundedCustomer(svc, 50_000);
  const business = await createCustomer(svc, { customerType: 'BUSINESS', businessInfo: businessInfo() });
  const external = await externalUsd(svc, customer.id, '4321');
  const wallet = (await svc.request('GET', `/customers/internal-accounts?customerId=${customer.id}&type=EMBEDDED_WALLET`)).body.data[0];
  assert.ok(wallet, 'the customer has an embedded wallet');
  const fixture = ACCOUNT_FIXTURES[0]!;
  const customers = () => totalCount(svc, '/customers');
  const customerAsStored = (id: string) => () => getJson(svc, `/customers/${id}`);
  const externalAccounts = async () => [await totalCount(svc, '/customers/external-accounts'), await totalCount(svc, '/platform/external-accounts')];
  const money = async () => [await totalCount(svc, '/transactions'), (await getJson(svc, `/internal-accounts/${usd.id}`)).balance.amount];
  const config = () => getJson(svc, '/config');
  const withBeneficiary = (beneficiary: Record<string, unknown>) => ({ ...fixture.accountInfo, beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace', ...beneficiary } });
  const row = (name: string, field: string, request: Row['request'], state: Row['state']): Row => ({ name, field, request, state });
  return [
    row('individual customer', 'fullName', (v) => ({ method: 'POST', path: '/customers', body: { customerType: 'INDIVIDUAL', fullName: v } }), customers),
    row('platformCustomerId', 'platformCustomerId', (v) => ({ method: 'POST', path: '/customers', body: { customerType: 'INDIVIDUAL', platformCustomerId: v } }), customers),
    row('address line', 'address.line1', (v) => ({ method: 'POST', path: '/customers', body: { customerType: 'INDIVIDUAL', address: { line1: v, country: 'US' } } }), customers),
    row('POST /users', 'platformUserId', (v) => ({ method: 'POST', path: '/users', body: { userType: 'INDIVIDUAL', platformUserId: v } }), customers),
    row('business customer', 'businessInfo.legalName', (v) => ({ method: 'POST', path: '/customers', body: { customerType: 'BUSINESS', businessInfo: { ...businessInfo(), legalName: v } } }), customers),
    row('business range token', 'businessInfo.expectedMonthlyTransactionVolume', (v) => ({
      method: 'POST',
      path: '/customers',
      body: { customerType: 'BUSINESS', businessInfo: { ...businessInfo(), expectedMonthlyTransactionVolume: v } },
    }), customers),
    row('customer update', 'address.city', (v) => ({ method: 'PATCH', path: `/customers/${customer.id}`, body: { customerType: 'INDIVIDUAL', address: { city: v, country: 'US' } } }), customerAsStored(customer.id)),
    row('business update', 'businessInfo.doingBusinessAs', (v) => ({
      method: 'PATCH',
      path: `/customers/${business.id}`,
      body: { customerType: 'BUSINESS', businessInfo: { doingBusinessAs: v } },
    }), customerAsStored(business.id)),
    row('external account bankName', 'accountInfo.bankName', (v) => ({
      method: 'POST',
      path: '/customers/external-accounts',
      body: { customerId: customer.id, currency: fixture.currency, accountInfo: { ...fixture.accountInfo, bankName: v } },
    }), externalAccounts),
    row('external account beneficiary', 'accountInfo.beneficiary.fullName', (v) => ({
      method: 'POST',
      path: '/customers/external-accounts',
      body: { customerId: customer.id, currency: fixture.currency, accountInfo: withBeneficiary({ fullName: v }) },
    }), externalAccounts),
    row('beneficiary address', 'accountInfo.beneficiary.address.line1', (v) => ({
      method: 'POST',
      path: '/customers/external-accounts',
      body: { customerId: customer.id, currency: fixture.currency, accountInfo: withBeneficiary({ address: { line1: v, city: 'Boston', postalCode: '02101', country: 'US' } }) },
    }), externalAccounts),
    row('platform external account', 'platformAccountId', (v) => ({
      method: 'POST',
      path: '/platform/external-accounts',
      body: { currency: fixture.currency, accountInfo: fixture.accountInfo, platformAccountId: v },
    }), externalAccounts),
    row('quote description', 'description', (v) => ({ method: 'POST', path: '/quotes', body: quoteBody(usd.id, external.id, 1_000, { description: v, immediatelyExecute: true }) }), money),
    row('quote payer data', 'senderCustomerInfo.FULL_NAME', (v) => ({
      method: 'POST',
      path: '/quotes',
      body: quoteBody(usd.id, external.id, 1_000, { senderCustomerInfo: { FULL_NAME: v }, immediatelyExecute: true }),
    }), money),
    row('quote payer data name', 'senderCustomerInfo', (v) => ({
      method: 'POST',
      path: '/quotes',
      body: quoteBody(usd.id, external.id, 1_000, { senderCustomerInfo: { [v]: 'Ada Lovelace' }, immediatelyExecute: true }),
    }), money),
    row('transfer remittance', 'remittanceInformation', (v) => ({
      method: 'POST',
      path: '/transfer-out',
      body: { source: { accountId: usd.id }, destination: { accountId: external.id }, amount: 1_000, remittanceInformation: v },
    }), money),
    row('config appName', 'embeddedWalletConfig.appName', (v) => ({ method: 'PATCH', path: '/config', body: { embeddedWalletConfig: { appName: v } } }), config),
    row('config sender name', 'embeddedWalletConfig.sendFromEmailSenderName', (v) => ({ method: 'PATCH', path: '/config', body: { embeddedWalletConfig: { sendFromEmailSenderName: v } } }), config),
    row('config payer field', 'supportedCurrencies.0.requiredCounterpartyFields.0.name', (v) => ({
      method: 'PATCH',
      path: '/config',
      body: { supportedCurrencies: [{ currencyCode: 'USD', requiredCounterpartyFields: [{ name: v, mandatory: true }] }] },
    }), config),
    row('wallet nickname', 'nickname', (v) => ({ method: 'POST', path: '/auth/credentials', body: { type: 'EMAIL_OTP', accountId: wallet.id, nickname: v } }), () =>
      getJson(svc, `/auth/credentials?accountId=${wallet.id}`)),
    row('customer list filter', 'platformCustomerId', (v) => ({ method: 'GET', path: `/customers?platformCustomerId=${encodeURIComponent(v)}` }), customers),
    row('transaction list filter', 'reference', (v) => ({ method: 'GET', path: `/transactions?reference=${encodeURIComponent(v)}` }), money),
  ];
}
