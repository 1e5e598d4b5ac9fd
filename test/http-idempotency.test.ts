// Idempotency-Key scope and bytes: a key belongs to the route a request reaches, not to
// the spelling of its path, and a key is printable ASCII or refused. A replay answers the
// first reply's bytes, though the log keeps only the record that reply rendered: also after
// that record has changed, and after a restart from the log alone or from a snapshot.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { SHORT_OUTCOME_MS } from '../actors/transaction.js';
import { withStore } from '../src/engine/store-reader.js';
import { rawExchange, serviceForSuite, startTestService, type TestService } from './support/service.js';
import { assertInvalid, assertStatus, customerAccounts, createCustomer, totalCount, unique } from './support/assertions.js';
import { externalUsd, fundedCustomer, getJson, quoteBody, until } from './support/money.js';
import { formBody, PDF } from './support/form-body.js';

const VERSION = '2025-10-13';

describe('Idempotency-Key scope', () => {
  const svc = serviceForSuite();

  it('one key on /fund, /fund/, //fund and a percent-encoded id funds once', async () => {
    const customer = await createCustomer(svc);
    const usd = (await customerAccounts(svc, customer.id)).find((a) => a.balance.currency.code === 'USD');
    assert.ok(usd !== undefined);
    const key = unique('fund-');
    const spellings = [
      `/${VERSION}/sandbox/internal-accounts/${usd.id}/fund`,
      `/${VERSION}/sandbox/internal-accounts/${usd.id}/fund/`,
      `/${VERSION}//sandbox/internal-accounts/${usd.id}//fund`,
      `/${VERSION}/sandbox/internal-accounts/${encodeURIComponent(usd.id)}/fund`,
    ];
    const texts: string[] = [];
    for (const path of spellings) {
      const res = await svc.request('POST', path, { body: { amount: 100 }, headers: { 'idempotency-key': key } });
      assertStatus(res, 200);
      texts.push(res.text);
    }
    assert.deepEqual(new Set(texts).size, 1, 'every spelling replays the first answer');
    const after = await svc.request('GET', `/internal-accounts/${usd.id}`);
    assert.equal(after.body.balance.amount, 100);
  });

  it('the same key on another account is another request', async () => {
    const customer = await createCustomer(svc);
    const [a, b] = (await customerAccounts(svc, customer.id)).slice(0, 2);
    const key = unique('fund-');
    assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${a.id}/fund`, { body: { amount: 7 }, headers: { 'idempotency-key': key } }), 200);
    const other = await svc.request('POST', `/sandbox/internal-accounts/${b.id}/fund`, { body: { amount: 7 }, headers: { 'idempotency-key': key } });
    assertStatus(other, 200);
    assert.equal(other.body.id, b.id);
    assert.equal(other.body.balance.amount, 7);
  });

  // uWebSockets.js trims bytes from 0x80 up at either end of a header value as if they
  // were whitespace (a signed-char comparison), so `aé` arrives as `a`: those cannot be
  // told apart here. A key made only of such bytes arrives empty, and is refused as such;
  // inside a key they arrive and are refused.
  it('a key with bytes outside printable ASCII is 400 naming Idempotency-Key and creates nothing', async () => {
    const before = await totalCount(svc, '/customers');
    const body = JSON.stringify({ customerType: 'INDIVIDUAL' });
    for (const key of [Buffer.from('é'), Buffer.from([0xff]), Buffer.from('aéa'), Buffer.from([0x61, 0x80, 0x62]), Buffer.from([0x61, 0x7f, 0x62]), Buffer.alloc(0)]) {
      const request = Buffer.concat([
        Buffer.from(`POST /${VERSION}/customers HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${svc.basic('sandbox')}\r\nContent-Type: application/json\r\n`),
        Buffer.from('Idempotency-Key: '),
        key,
        Buffer.from(`\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
      ]);
      const [res] = await rawExchange(svc.service.http.port, request, [{}]);
      assert.equal(res!.status, 400, `${key.toString('hex')}: ${res!.body}`);
      const parsed = JSON.parse(res!.body) as { code: string; details: Array<{ field: string }> };
      assert.equal(parsed.code, 'INVALID_INPUT');
      assert.ok(parsed.details.some((d) => d.field === 'Idempotency-Key'), res!.body);
    }
    assert.equal(await totalCount(svc, '/customers'), before);
    assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' }, headers: { 'idempotency-key': 'ca\u00e9f' } }), 'Idempotency-Key');
  });
});

/** A keyed request and the first answer it got. */
interface Keyed {
  method: string;
  path: string;
  body?: Record<string, unknown>;
  key: string;
  status: number;
  text: string;
}

describe('an idempotent replay, with the log naming the record instead of the reply', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'http-idempotency-replay-'));
  const clock = new ManualClock(Date.UTC(2026, 6, 1));
  let svc: TestService;
  const sent: Keyed[] = [];
  after(async () => {
    await svc?.stop({ keepData: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  const send = async (method: string, path: string, body?: Record<string, unknown>): Promise<Keyed> => {
    const key = unique('replay-');
    const res = await svc.request(method, path, { body, headers: { 'idempotency-key': key } });
    assert.ok(res.status === 200 || res.status === 201, `${method} ${path}: ${res.status} ${res.text}`);
    const keyed = { method, path, body, key, status: res.status, text: res.text };
    sent.push(keyed);
    return keyed;
  };
  /** Every keyed request sent again answers its first bytes, marked as replayed. */
  const assertReplays = async (when: string): Promise<void> => {
    for (const { method, path, body, key, status, text } of sent) {
      const res = await svc.request(method, path, { body, headers: { 'idempotency-key': key } });
      assert.equal(res.status, status, `${when}: ${method} ${path}`);
      assert.equal(res.text, text, `${when}: ${method} ${path} answers its first bytes`);
      assert.equal(res.headers.get('idempotent-replayed'), 'true', `${when}: ${method} ${path}`);
    }
  };
  const patchCustomer = async (id: string, fullName: string): Promise<void> =>
    assertStatus(await svc.request('PATCH', `/customers/${id}`, { body: { customerType: 'INDIVIDUAL', fullName } }), 200);

  it('answers the first bytes of a customer create, payments and a transfer after their records changed', async () => {
    svc = await startTestService({ clock, dataDir });
    const customer = JSON.parse((await send('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada' })).text) as { id: string };
    const payer = await fundedCustomer(svc, 1_000_000);
    const payee = await fundedCustomer(svc, 0);
    const refunds = await externalUsd(svc, payer.customer.id, '004');
    const payout = { destination: { destinationType: 'ACCOUNT', accountId: refunds.id, paymentRail: 'ACH' } };
    await send('POST', '/quotes', quoteBody(payer.usd.id, payee.usd.id, 1_000, { immediatelyExecute: true }));
    const quote = JSON.parse((await send('POST', '/quotes', quoteBody(payer.usd.id, refunds.id, 700, payout))).text) as { id: string };
    const executed = JSON.parse((await send('POST', `/quotes/${quote.id}/execute`)).text) as { transactionId: string };
    const immediate = JSON.parse((await send('POST', '/quotes', quoteBody(payer.usd.id, refunds.id, 800, { ...payout, immediatelyExecute: true }))).text) as { id: string; transactionId: string };
    const transfer = JSON.parse((await send('POST', '/transfer-out', { source: { accountId: payer.usd.id }, destination: { accountId: refunds.id }, amount: 450 })).text) as { id: string };
    await assertReplays('at once');

    // The records move on: the customer is renamed, the sandbox bank refunds the payouts and the transfer.
    await patchCustomer(customer.id, 'Ada Lovelace');
    clock.advance(SHORT_OUTCOME_MS + 1);
    const statusOf = (id: string) => svc.service.services.world.transactions.get(id)?.status;
    await until(svc, () => [executed.transactionId, immediate.transactionId, transfer.id].every((id) => statusOf(id) === 'REFUNDED'));
    for (const [path, first] of [[`/customers/${customer.id}`, sent[0]!], [`/quotes/${immediate.id}`, sent[4]!], [`/transactions/${transfer.id}`, sent[5]!]] as const) {
      assert.notDeepEqual(await getJson(svc, path), JSON.parse(first.text), `${path} changed since its first reply`);
    }
    await assertReplays('after the records changed');
  });

  it('answers them after a restart from the log alone', async () => {
    await svc.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    assert.equal(svc.service.services.engine.snapshotSeq, 0, 'replayed from the log alone');
    await assertReplays('after a restart from the log');
  });

  it('answers them after a restart from a snapshot and the log after it', async () => {
    const laterKeyed = await send('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Bea' });
    const later = JSON.parse(laterKeyed.text) as { id: string };
    await svc.service.services.engine.snapshot();
    // The snapshot holds each reply's record as the reply saw it, Bea's unchanged one too: a name
    // would go wrong once a later snapshot wrote the record changed or removed.
    const held = await withStore(dataDir, (store) => store.snapshot()!.idempotency.map(([, record]) => record));
    const heldFor = (keyed: Keyed) => held.find((record) => record.key.endsWith(` ${keyed.key}`))!;
    assert.equal(heldFor(laterKeyed).current, undefined);
    assert.equal((heldFor(laterKeyed).reports as { id: string }).id, later.id);
    assert.equal(heldFor(sent[0]!).current, undefined);
    assert.equal((heldFor(sent[0]!).reports as { fullName: string }).fullName, 'Ada');
    // Changed after the snapshot: the log's tail renames both customers again.
    await patchCustomer(later.id, 'Bea Two');
    await patchCustomer(JSON.parse(sent[0]!.text).id as string, 'Ada Byron');
    await svc.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    assert.ok(svc.service.services.engine.snapshotSeq > 0, 'loaded from a snapshot');
    await assertReplays('after a restart from a snapshot');
  });

  // A snapshot once named a reply's record by id while it was unchanged; a later snapshot that
  // wrote the record changed, or without it, left the name wrong and the store refused to open.
  it('answers them after a later snapshot wrote their records changed or removed', async () => {
    const soft = JSON.parse((await send('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Cy' })).text) as { id: string };
    const business = await svc.request('POST', '/customers', { body: { customerType: 'BUSINESS', businessInfo: { legalName: 'Acme LLC', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-03-14', registrationNumber: 'REG-1' } } });
    assertStatus(business, 201);
    const { raw, contentType } = await formBody({ documentHolder: (business.body as { id: string }).id, documentType: 'UTILITY_BILL', country: 'US' }, { bytes: PDF, name: 'bill.pdf', type: 'application/pdf' });
    const key = unique('replay-');
    const uploaded = await svc.request('POST', '/documents', { raw, headers: { 'content-type': contentType, 'idempotency-key': key } });
    assertStatus(uploaded, 201);
    await svc.service.services.engine.snapshot();
    await patchCustomer(soft.id, 'Cy Twice');
    assertStatus(await svc.request('DELETE', `/customers/${soft.id}`), 200);
    assertStatus(await svc.request('DELETE', `/documents/${(uploaded.body as { id: string }).id}`), 204);
    await svc.service.services.engine.snapshot();
    await svc.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    await assertReplays('after a later snapshot wrote the records');
    const again = await svc.request('POST', '/documents', { raw, headers: { 'content-type': contentType, 'idempotency-key': key } });
    assert.equal(again.status, 201);
    assert.equal(again.text, uploaded.text, 'the removed document\'s upload answers its first bytes');
  });
});
