// Quotes from an EMBEDDED_WALLET source (SERVICE_SPEC part 4 "Quotes", 5.6; CONTRACT.md
// "Embedded-wallet API"): the quote carries the payloadToSign the service keeps, and
// execute moves money only on a stamp over those exact bytes by a live session of the
// source wallet. Played as an integrator: @turnkey/crypto opens the session key,
// @turnkey/api-key-stamper stamps. Every refusal leaves the quote PENDING and the balances
// as they were. Time moves by ManualClock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { keyPairFromPrivateKey, keyPairToHex, type P256KeyPairHex } from '../src/crypto/p256.js';
import { executeQuote } from '../actors/commands/quotes.js';
import { DomainError } from '../actors/errors.js';
import { ServiceWalletPorts } from '../src/wallet/ports.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertStatus, createCustomer, ID_RE, unique } from './support/assertions.js';
import { hex, newKeyPairHex, turnkeyStamp } from './support/crypto-fixtures.js';
import { HoldingClock } from './support/holding-clock.js';
import { accountIn, assertLedgerHolds, balanceOf, createQuote, fund, getJson, quoteBody, until } from './support/money.js';

interface Wallet {
  customerId: string;
  accountId: string;
  credentialId: string;
  session: { id: string; key: P256KeyPairHex };
}

describe('quotes from an EMBEDDED_WALLET source (sandbox)', () => {
  // Holds timers back when a test needs a moment past an expiry that its timer has not reached.
  const clock = new HoldingClock(Date.UTC(2026, 0, 1));
  const svc = serviceForSuite({ clock });

  /** Verifies the EMAIL_OTP credential with a fresh client key and opens the sealed session key. */
  async function login(credentialId: string): Promise<Wallet['session']> {
    const client = newKeyPairHex();
    const res = await svc.request('POST', `/auth/credentials/${credentialId}/verify`, { body: { otp: '000000', clientPublicKey: client.publicKey } });
    assertStatus(res, 200);
    const privateKey = decryptCredentialBundle(res.body.encryptedSessionSigningKey, client.privateKey);
    return { id: res.body.id, key: keyPairToHex(keyPairFromPrivateKey(hex(privateKey))) };
  }

  /** A customer's embedded wallet (USDB) funded with `amount`, with an EMAIL_OTP credential and one session. */
  async function walletWithSession(amount: number): Promise<Wallet> {
    const customer = await createCustomer(svc, { email: `${unique('w')}@example.com` });
    const account = await accountIn(svc, customer.id, 'USDB');
    assert.equal(account.type, 'EMBEDDED_WALLET');
    if (amount > 0) await fund(svc, account.id, amount);
    const credential = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: account.id } });
    assertStatus(credential, 201);
    return { customerId: customer.id, accountId: account.id, credentialId: credential.body.id, session: await login(credential.body.id) };
  }

  function execute(quoteId: string, signature?: string): Promise<any> {
    return svc.request('POST', `/quotes/${quoteId}/execute`, signature === undefined ? {} : { headers: { 'Service-Wallet-Signature': signature } });
  }

  function payloadOf(quote: any): string {
    assert.equal(quote.paymentInstructions.length, 1);
    const info = quote.paymentInstructions[0].accountOrWalletInfo;
    assert.equal(info.accountType, 'EMBEDDED_WALLET');
    return info.payloadToSign;
  }

  /** Asserts the refusal is a 401 with `reason`, the quote is still PENDING and no balance moved. */
  async function refused(res: any, reason: string, quoteId: string, balances: ReadonlyArray<readonly [string, number]>): Promise<void> {
    assert.equal(assertError(res, 401, 'UNAUTHORIZED').reason, reason);
    const quote = await getJson(svc, `/quotes/${quoteId}`);
    assert.equal(quote.status, 'PENDING');
    assert.equal(quote.transactionId, undefined);
    for (const [id, amount] of balances) assert.equal(await balanceOf(svc, id), amount, `${id} is unchanged`);
  }

  it('the integrator flow: the quote carries payloadToSign; a stamp by the session over it executes; money moves', async () => {
    const alice = await walletWithSession(10_000);
    const bob = await walletWithSession(0);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 2_500));
    assert.equal(quote.status, 'PENDING');
    const payload = payloadOf(quote);
    assert.deepEqual(JSON.parse(payload), {
      action: 'EXECUTE_QUOTE',
      accountId: alice.accountId,
      quoteId: quote.id,
      destination: { destinationType: 'ACCOUNT', accountId: bob.accountId },
      sendingCurrency: 'USDB',
      totalSendingAmount: quote.totalSendingAmount,
      feesIncluded: quote.feesIncluded,
      receivingCurrency: 'USDB',
      totalReceivingAmount: quote.totalReceivingAmount,
      expiresAt: quote.expiresAt,
    });
    // The service keeps its own copy: reading the quote gives the same bytes.
    assert.equal(payloadOf(await getJson(svc, `/quotes/${quote.id}`)), payload);

    const res = await execute(quote.id, await turnkeyStamp(payload, alice.session.key));
    assertStatus(res, 200);
    assert.equal(res.body.status, 'COMPLETED');
    assert.match(res.body.transactionId, ID_RE('Transaction'));
    assert.equal(payloadOf(res.body), payload);
    assert.equal(await balanceOf(svc, alice.accountId), 10_000 - quote.totalSendingAmount);
    assert.equal(await balanceOf(svc, bob.accountId), quote.totalReceivingAmount);
    const tx = await getJson(svc, `/transactions/${res.body.transactionId}`);
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.quoteId, quote.id);
    assertLedgerHolds(svc);

    // Executed once: the same stamp again does not pay twice.
    assertError(await execute(quote.id, await turnkeyStamp(payload, alice.session.key)), 409, 'QUOTE_ALREADY_EXECUTED');
    assert.equal(await balanceOf(svc, alice.accountId), 10_000 - quote.totalSendingAmount);
  });

  it('Idempotency-Key: a refused execute is not remembered; the signed one is, and replays without paying twice', async () => {
    const alice = await walletWithSession(4_000);
    const bob = await walletWithSession(0);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 1_000));
    const key = unique('execute');
    const unsigned = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'Idempotency-Key': key } });
    await refused(unsigned, 'Invalid Service-Wallet-Signature', quote.id, [[alice.accountId, 4_000], [bob.accountId, 0]]);
    const headers = { 'Idempotency-Key': key, 'Service-Wallet-Signature': await turnkeyStamp(payloadOf(quote), alice.session.key) };
    const first = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers });
    assertStatus(first, 200);
    const again = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers });
    assertStatus(again, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(await balanceOf(svc, alice.accountId), 4_000 - quote.totalSendingAmount);
    assert.equal(await balanceOf(svc, bob.accountId), quote.totalReceivingAmount);
  });

  it('Grid-Wallet-Signature carries the stamp as Service-Wallet-Signature does; the two disagreeing is a 400 that moves nothing', async () => {
    const alice = await walletWithSession(10_000);
    const bob = await walletWithSession(0);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 1_000));
    const stamp = await turnkeyStamp(payloadOf(quote), alice.session.key);
    const other = await turnkeyStamp('other bytes', alice.session.key);
    const both = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'Service-Wallet-Signature': stamp, 'Grid-Wallet-Signature': other } });
    assertError(both, 400, 'INVALID_INPUT', ['Grid-Wallet-Signature']);
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'PENDING');
    assert.equal(await balanceOf(svc, alice.accountId), 10_000);
    const paid = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'Grid-Wallet-Signature': stamp } });
    assertStatus(paid, 200);
    assert.equal(await balanceOf(svc, bob.accountId), 1_000);
  });

  it('a quote from any other account carries no paymentInstructions and needs no signature', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const other = await accountIn(svc, (await createCustomer(svc)).id, 'USD');
    await fund(svc, usd.id, 500);
    const quote = await createQuote(svc, quoteBody(usd.id, other.id, 100));
    assert.equal(quote.paymentInstructions, undefined);
    assertStatus(await execute(quote.id), 200);
  });

  it('immediatelyExecute is refused for an EMBEDDED_WALLET source: 400 naming the field, nothing made', async () => {
    const alice = await walletWithSession(1_000);
    const bob = await walletWithSession(0);
    const res = await svc.request('POST', '/quotes', { body: quoteBody(alice.accountId, bob.accountId, 100, { immediatelyExecute: true }) });
    assertError(res, 400, 'INVALID_INPUT', ['immediatelyExecute']);
    const signed = await svc.request('POST', '/quotes', {
      body: quoteBody(alice.accountId, bob.accountId, 100, { immediatelyExecute: true }),
      headers: { 'Service-Wallet-Signature': 'sandbox-valid-signature' },
    });
    assertError(signed, 400, 'INVALID_INPUT', ['immediatelyExecute']);
    assert.equal(await balanceOf(svc, alice.accountId), 1_000);
    assert.equal(await balanceOf(svc, bob.accountId), 0);
  });

  it('refusals: no header, malformed stamp, another wallet\'s session, a stamp over other bytes; nothing moves', async () => {
    const alice = await walletWithSession(5_000);
    const bob = await walletWithSession(0);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 1_000));
    const payload = payloadOf(quote);
    const balances = [[alice.accountId, 5_000], [bob.accountId, 0]] as const;

    await refused(await execute(quote.id), 'Invalid Service-Wallet-Signature', quote.id, balances);
    await refused(await execute(quote.id, 'not-a-stamp'), 'Invalid Service-Wallet-Signature', quote.id, balances);
    await refused(await execute(quote.id, Buffer.from('{"publicKey":"02","scheme":"x","signature":"00"}').toString('base64url')), 'Invalid Service-Wallet-Signature', quote.id, balances);
    // Bob's live session signs Alice's payload: a valid stamp, but not by a session of the source wallet.
    await refused(await execute(quote.id, await turnkeyStamp(payload, bob.session.key)), 'Invalid Service-Wallet-Signature', quote.id, balances);
    // Alice's session over anything but the service's bytes: the same JSON re-serialised with a space, another quote's payload.
    const reserialised = JSON.stringify(JSON.parse(payload), null, 1);
    await refused(await execute(quote.id, await turnkeyStamp(reserialised, alice.session.key)), 'Invalid Service-Wallet-Signature', quote.id, balances);
    const another = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 1_000));
    await refused(await execute(quote.id, await turnkeyStamp(payloadOf(another), alice.session.key)), 'Invalid Service-Wallet-Signature', quote.id, balances);
    // A stamp by a key that was never a session.
    await refused(await execute(quote.id, await turnkeyStamp(payload, newKeyPairHex())), 'Invalid Service-Wallet-Signature', quote.id, balances);

    // Refusals spent nothing: the right stamp still executes.
    assertStatus(await execute(quote.id, await turnkeyStamp(payload, alice.session.key)), 200);
    assert.equal(await balanceOf(svc, alice.accountId), 5_000 - quote.totalSendingAmount);
  });

  it('a revoked session\'s stamp is refused; another live session of the wallet executes', async () => {
    const alice = await walletWithSession(3_000);
    const bob = await walletWithSession(0);
    const second = await login(alice.credentialId);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 700));
    const payload = payloadOf(quote);
    const stamp = await turnkeyStamp(payload, alice.session.key);

    // Self-logout through the signed retry, stamped by the session itself.
    const first = await svc.request('DELETE', `/auth/sessions/${alice.session.id}`);
    assertStatus(first, 202);
    const revoke = await svc.request('DELETE', `/auth/sessions/${alice.session.id}`, {
      headers: { 'Service-Wallet-Signature': await turnkeyStamp(first.body.payloadToSign, alice.session.key), 'Request-Id': first.body.requestId },
    });
    assertStatus(revoke, 204);

    await refused(await execute(quote.id, stamp), 'Session revoked', quote.id, [[alice.accountId, 3_000], [bob.accountId, 0]]);
    assertStatus(await execute(quote.id, await turnkeyStamp(payload, second.key)), 200);
    assert.equal(await balanceOf(svc, bob.accountId), quote.totalReceivingAmount);
  });

  it('an expired session\'s stamp is refused while the quote is still live', async () => {
    const alice = await walletWithSession(2_000);
    const bob = await walletWithSession(0);
    // Sessions live 15 minutes, quotes 5: quote late in the session, execute after it ends.
    clock.advance(14 * 60_000);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 400));
    const stamp = await turnkeyStamp(payloadOf(quote), alice.session.key);
    clock.advance(90_000);
    await svc.service.services.engine.settled();
    await refused(await execute(quote.id, stamp), 'Session expired', quote.id, [[alice.accountId, 2_000], [bob.accountId, 0]]);
  });

  it('a session past expiresAt is refused by the execute itself, before its expiry timer has run', async () => {
    const alice = await walletWithSession(2_000);
    const bob = await walletWithSession(0);
    const listed = await getJson(svc, `/auth/sessions?accountId=${alice.accountId}`);
    const expiresAt = Date.parse(listed.data.find((s: any) => s.id === alice.session.id).expiresAt);
    clock.advance(expiresAt - 60_000 - clock.now());
    const early = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 400));
    const late = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 500));
    const lateStamp = await turnkeyStamp(payloadOf(late), alice.session.key);
    clock.hold();
    try {
      // Its last millisecond: the session still signs.
      clock.advance(expiresAt - 1 - clock.now());
      const paid = await execute(early.id, await turnkeyStamp(payloadOf(early), alice.session.key));
      assertStatus(paid, 200);
      assert.equal(paid.body.status, 'COMPLETED');
      const left = 2_000 - early.totalSendingAmount;
      // At expiresAt the session has ended, though its expiry timer is held and it is still on the wallet.
      clock.advance(1);
      await svc.service.services.engine.settled();
      assert.ok(clock.heldCount > 0, 'the expiry timer fell due and is held');
      const wallet = svc.service.services.world.wallets.ofAccount(alice.accountId);
      assert.ok(wallet?.sessions.some((s) => s.id === alice.session.id), 'the session has not been ended by its timer');
      await refused(await execute(late.id, lateStamp), 'Session expired', late.id, [[alice.accountId, left], [bob.accountId, early.totalReceivingAmount]]);
    } finally {
      clock.release();
    }
    // Once the timer has ended it, the answer is the same.
    await until(svc, () => !svc.service.services.world.wallets.ofAccount(alice.accountId)!.sessions.some((s) => s.id === alice.session.id), 'the expiry timer');
    assert.deepEqual((await getJson(svc, `/auth/sessions?accountId=${alice.accountId}`)).data, []);
    await refused(await execute(late.id, lateStamp), 'Session expired', late.id, [[alice.accountId, 2_000 - early.totalSendingAmount]]);
  });

  it('an expired quote stays unpaid even with a good stamp', async () => {
    const alice = await walletWithSession(2_000);
    const bob = await walletWithSession(0);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 400));
    clock.advance(5 * 60_000);
    await svc.service.services.engine.settled();
    assertError(await execute(quote.id, await turnkeyStamp(payloadOf(quote), alice.session.key)), 400, 'QUOTE_EXPIRED');
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'EXPIRED');
    assert.equal(await balanceOf(svc, alice.accountId), 2_000);
  });

  it('sandbox accepts the literal sandbox-valid-signature, with no session at all', async () => {
    const customer = await createCustomer(svc);
    const wallet = await accountIn(svc, customer.id, 'USDB');
    const bob = await walletWithSession(0);
    await fund(svc, wallet.id, 900);
    const quote = await createQuote(svc, quoteBody(wallet.id, bob.accountId, 300));
    await refused(await execute(quote.id, 'sandbox-valid-signature-but-not-quite'), 'Invalid Service-Wallet-Signature', quote.id, [[wallet.id, 900]]);
    const res = await execute(quote.id, 'sandbox-valid-signature');
    assertStatus(res, 200);
    assert.equal(res.body.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, wallet.id), 900 - quote.totalSendingAmount);
  });

  it('production refuses the sandbox literal', async () => {
    const payer = await createCustomer(svc, {}, 'production');
    const payee = await createCustomer(svc, {}, 'production');
    const from = await accountIn(svc, payer.id, 'USDB', 'production');
    const to = await accountIn(svc, payee.id, 'USDB', 'production');
    const res = await svc.request('POST', '/quotes', { body: quoteBody(from.id, to.id, 100), auth: 'production' });
    assertStatus(res, 201);
    const quote = res.body;
    assert.equal(typeof payloadOf(quote), 'string');
    const executed = await svc.request('POST', `/quotes/${quote.id}/execute`, { headers: { 'Service-Wallet-Signature': 'sandbox-valid-signature' }, auth: 'production' });
    assert.equal(assertError(executed, 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    assert.equal((await getJson(svc, `/quotes/${quote.id}`, 'production')).status, 'PENDING');
  });

  /**
   * Replaces the service's stamp verifier: the `n`-th call (from 1) waits for the returned
   * `release` before it verifies (`before`) or before it answers (`after`); `entered` turns
   * true when it reaches the gate. `restore` puts the verifier back.
   */
  function gateStampCheck(n: number, where: 'before' | 'after'): { entered: () => boolean; release: () => void; restore: () => void } {
    const crypto = svc.service.services.crypto;
    const verifyStamp = crypto.verifyStamp;
    let calls = 0;
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    crypto.verifyStamp = async (input) => {
      const gated = ++calls === n;
      if (gated && where === 'before') {
        entered = true;
        await gate;
      }
      const result = await verifyStamp.call(crypto, input);
      if (gated && where === 'after') {
        entered = true;
        await gate;
      }
      return result;
    };
    return { entered: () => entered, release, restore: () => (crypto.verifyStamp = verifyStamp) };
  }

  /**
   * Alice (2,000) and Bob (0), each with a session; a quote of 500 from Alice to Bob and
   * Alice's stamp over it; and the headers of the signed retry that revokes Alice's session,
   * its step 1 answered 202: where a revocation and an execute race.
   */
  async function stampedQuoteAndRevocation(): Promise<{ alice: Wallet; bob: Wallet; quote: any; stamp: string; revokeHeaders: Record<string, string> }> {
    const alice = await walletWithSession(2_000);
    const bob = await walletWithSession(0);
    const quote = await createQuote(svc, quoteBody(alice.accountId, bob.accountId, 500));
    const stamp = await turnkeyStamp(payloadOf(quote), alice.session.key);
    const first = await svc.request('DELETE', `/auth/sessions/${alice.session.id}`);
    assertStatus(first, 202);
    const revokeHeaders = { 'Service-Wallet-Signature': await turnkeyStamp(first.body.payloadToSign, alice.session.key), 'Request-Id': first.body.requestId };
    return { alice, bob, quote, stamp, revokeHeaders };
  }

  async function turnUntil(done: () => boolean): Promise<void> {
    while (!done()) await new Promise((resolve) => setImmediate(resolve));
  }

  it('a revocation and an execute whose stamps are checked at once: the revocation decided first, the session is gone', async () => {
    const { alice, bob, quote, stamp, revokeHeaders } = await stampedQuoteAndRevocation();

    // Neither holds the wallet account while its stamp is checked: the one decided first is
    // ordered first. Both checks wait at a gate; the revocation's goes on first.
    const revocationCheck = gateStampCheck(1, 'before');
    try {
      const revoked = svc.request('DELETE', `/auth/sessions/${alice.session.id}`, { headers: revokeHeaders });
      await turnUntil(revocationCheck.entered);
      const executeCheck = gateStampCheck(1, 'before');
      try {
        const executed = execute(quote.id, stamp);
        await turnUntil(executeCheck.entered);
        revocationCheck.release();
        assertStatus(await revoked, 204);
        executeCheck.release();
        await refused(await executed, 'Session revoked', quote.id, [[alice.accountId, 2_000], [bob.accountId, 0]]);
      } finally {
        executeCheck.restore();
      }
    } finally {
      revocationCheck.restore();
    }
  });

  it('a session revoked while the execute\'s stamp is verified: the stamp verifies, and the decision, holding the wallet, refuses it', async () => {
    const { alice, bob, quote, stamp, revokeHeaders } = await stampedQuoteAndRevocation();

    // The execute's stamp is verified (a live session's key made it) and its answer waits at the gate.
    const executeCheck = gateStampCheck(1, 'after');
    try {
      const executed = execute(quote.id, stamp);
      await turnUntil(executeCheck.entered);
      executeCheck.restore();
      assertStatus(await svc.request('DELETE', `/auth/sessions/${alice.session.id}`, { headers: revokeHeaders }), 204);
      executeCheck.release();
      await refused(await executed, 'Session revoked', quote.id, [[alice.accountId, 2_000], [bob.accountId, 0]]);
    } finally {
      executeCheck.restore();
    }
  });

  it('a session revoked after the execute\'s stamp was verified and before its decision holds the wallet is refused by the decision', async () => {
    const { alice, bob, quote, stamp, revokeHeaders } = await stampedQuoteAndRevocation();

    // The execute run on the engine as its route runs it, with a gate between its prepare
    // (the stamp verified, on the wallet as it was) and its decision.
    const { engine, world } = svc.service.services;
    const env = world.envs.get(world.quotes.get(quote.id)!.envId)!;
    let prepared = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const gated: typeof executeQuote = {
      ...executeQuote,
      prepare: async (input, state, at) => {
        const facts = await executeQuote.prepare!(input, state, at);
        prepared = true;
        await gate;
        return facts;
      },
    };
    const input = { env, quoteId: quote.id, stamp: { header: stamp, ports: new ServiceWalletPorts(svc.service.services) } };
    const executed = engine.run(gated, input, (q) => q);
    await turnUntil(() => prepared);
    assertStatus(await svc.request('DELETE', `/auth/sessions/${alice.session.id}`, { headers: revokeHeaders }), 204);
    release();
    await assert.rejects(executed, (err: unknown) => {
      assert.ok(err instanceof DomainError);
      assert.equal(err.code, 'UNAUTHORIZED');
      assert.equal(err.reason, 'Session revoked');
      return true;
    });
    const after = await getJson(svc, `/quotes/${quote.id}`);
    assert.equal(after.status, 'PENDING');
    assert.equal(await balanceOf(svc, alice.accountId), 2_000);
    assert.equal(await balanceOf(svc, bob.accountId), 0);
  });
});
