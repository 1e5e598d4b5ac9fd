// Helpers for the money suites: funded customers, quotes, balances, the webhook outbox and
// the ledger invariant, all as an integrator (or, for the outbox and the invariant, the
// in-process world) sees them.
import assert from 'node:assert/strict';
import { assertStatus, createCustomer, customerAccounts, type Auth } from './assertions.js';
import type { TestService } from './service.js';

export async function accountIn(svc: TestService, customerId: string, code: string, auth: Auth = 'sandbox'): Promise<any> {
  const account = (await customerAccounts(svc, customerId, auth)).find((a) => a.balance.currency.code === code);
  assert.ok(account, `customer ${customerId} has a ${code} account`);
  return account;
}

export async function balanceOf(svc: TestService, accountId: string, auth: Auth = 'sandbox'): Promise<number> {
  const res = await svc.request('GET', `/internal-accounts/${accountId}`, { auth });
  assertStatus(res, 200);
  return res.body.balance.amount;
}

export async function fund(svc: TestService, accountId: string, amount: number, auth: Auth = 'sandbox'): Promise<void> {
  const res = await svc.request('POST', `/sandbox/internal-accounts/${accountId}/fund`, { body: { amount }, auth });
  assertStatus(res, 200);
}

/** A customer with its USD account funded with `amount` cents. */
export async function fundedCustomer(svc: TestService, amount: number, body: Record<string, unknown> = {}): Promise<{ customer: any; usd: any }> {
  const customer = await createCustomer(svc, body);
  const usd = await accountIn(svc, customer.id, 'USD');
  if (amount > 0) await fund(svc, usd.id, amount);
  return { customer, usd };
}

/** An external USD bank account of `customerId` whose account number ends in `suffix`. */
export async function externalUsd(svc: TestService, customerId: string, suffix: string, over: Record<string, unknown> = {}): Promise<any> {
  const accountInfo = {
    accountType: 'USD_ACCOUNT',
    accountNumber: `987654${suffix}`,
    routingNumber: '021000021',
    bankAccountType: 'CHECKING',
    beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' },
  };
  const res = await svc.request('POST', '/customers/external-accounts', { body: { currency: 'USD', accountInfo, customerId, ...over } });
  assertStatus(res, 201);
  return res.body;
}

export function quoteBody(sourceId: string, destinationId: string, amount: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    source: { sourceType: 'ACCOUNT', accountId: sourceId },
    destination: { destinationType: 'ACCOUNT', accountId: destinationId },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: amount,
    ...over,
  };
}

export async function createQuote(svc: TestService, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<any> {
  const res = await svc.request('POST', '/quotes', { body, headers });
  assertStatus(res, 201);
  return res.body;
}

export async function execute(svc: TestService, quoteId: string, headers: Record<string, string> = {}): Promise<any> {
  const res = await svc.request('POST', `/quotes/${quoteId}/execute`, { headers });
  assertStatus(res, 200);
  return res.body;
}

export async function getJson(svc: TestService, path: string, auth: Auth = 'sandbox'): Promise<any> {
  const res = await svc.request('GET', path, { auth });
  assertStatus(res, 200);
  return res.body;
}

/** The webhook events recorded for transaction `txId`, in creation order: [type, status]. */
export function webhooksOf(svc: TestService, txId: string): Array<[string, string]> {
  const world = svc.service.services.world;
  const out: Array<[string, string]> = [];
  for (const env of world.envs.records.keys()) {
    for (const id of world.webhookEvents.idsIn(env)) {
      const event = world.webhookEvents.get(id)!;
      if (event.transaction?.id === txId) out.push([event.type, event.transaction.status]);
    }
  }
  return out;
}

/** The balances the ACCOUNT_STATUS events of an internal account reported, oldest first. */
export async function accountStatusesOf(svc: TestService, accountId: string): Promise<number[]> {
  const res = await svc.request<{ data: Array<{ type: string; account?: { id: string; balance: { amount: number } }; timestamp: string }> }>('GET', '/webhooks/events?type=ACCOUNT_STATUS&limit=100');
  return res.body.data
    .filter((event) => event.account?.id === accountId)
    .reverse()
    .map((event) => event.account!.balance.amount);
}

export function assertLedgerHolds(svc: TestService): void {
  assert.deepEqual(svc.service.services.world.checkInvariants(), []);
}

/**
 * Waits for work the engine started on its own (a timer that fell due) to become
 * durable: polls `done` between turns of the event loop. The bound is generous wall time,
 * not a number of turns, because on a loaded machine a log flush can outlast thousands
 * of turns; the clock the service reads is still the manual one.
 */
export async function until(svc: TestService, done: () => boolean, what = 'the awaited change'): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    await svc.service.services.engine.settled();
    if (done()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`${what} did not happen within 15 s`);
}
