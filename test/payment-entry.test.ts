// The log holds decided facts: a quote-and-execute between two internal accounts is one
// entry of about 290 bytes, the quote's `quote.decided` (its ids, amounts and price, no
// record) and the execution's `payment.decided` (the quote, the transaction id), ids as
// their UUIDs' bytes; the quote's record, its transactions, postings and webhook events
// are derived when it applies. What a platform reads back (the events' environment, type
// and timestamp) is what it read when they were logged in full.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { decodeGroup } from '../src/engine/log.js';
import { idOf, loggedId, newId } from '../src/engine/ids.js';
import { startTestService } from './support/service.js';
import { createQuote, fundedCustomer, getJson, quoteBody } from './support/money.js';

/** What a quote-and-execute between internal accounts may take in the log. */
const PAYMENT_ENTRY_LIMIT = 400;

describe('the payment entry', () => {
  it(`is under ${PAYMENT_ENTRY_LIMIT} bytes, and its webhook events read back with the payment's environment and time`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'payment-entry-'));
    let svc = await startTestService({ dataDir });
    let quote: { id: string; transactionId: string; createdAt: string };
    try {
      const payer = await fundedCustomer(svc, 1_000_000);
      const payee = await fundedCustomer(svc, 0);
      quote = await createQuote(svc, quoteBody(payer.usd.id, payee.usd.id, 1_000, { immediatelyExecute: true }));
    } finally {
      await svc.stop({ keepData: true });
    }
    const root = open({ path: dataDir });
    const paymentBytes: number[] = [];
    try {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      for (const { key, value } of log.getRange()) {
        const group = decodeGroup<{ type: string }>(key, value);
        if (group.length === 1 && group[0]!.events.some((e) => e.type === 'quote.decided')) paymentBytes.push(value.length);
      }
    } finally {
      await root.close();
    }
    // After a restart the events come from the log alone.
    svc = await startTestService({ dataDir });
    try {
      assert.equal(paymentBytes.length, 1, `payment entries: ${paymentBytes.join(', ')}`);
      assert.ok(paymentBytes[0]! < PAYMENT_ENTRY_LIMIT, `the payment entry is ${paymentBytes[0]} bytes`);
      // The quote's record, derived again from its facts on replay, reads as its first reply did.
      assert.deepEqual(await getJson(svc, `/quotes/${quote.id}`), quote);
      const events = (await getJson(svc, '/webhooks/events?limit=100')) as { data: Array<{ type: string; timestamp: string; transaction?: { id: string } }> };
      // Listed in the payment's environment, at the payment's time.
      const outgoing = events.data.find((e) => e.type === 'OUTGOING_PAYMENT' && e.transaction?.id === quote.transactionId);
      assert.equal(outgoing?.timestamp, quote.createdAt);
      assert.ok(events.data.some((e) => e.type === 'INCOMING_PAYMENT' && e.timestamp === quote.createdAt));
      assert.ok(events.data.filter((e) => e.type === 'ACCOUNT_STATUS' && e.timestamp === quote.createdAt).length >= 2, 'both balances changed');
    } finally {
      await svc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('carries an id of its field\'s kind as 16 bytes and gives it back exactly; any other id as its string', () => {
    const quoteId = newId('Quote', 1_795_798_453_485);
    const logged = loggedId(quoteId, 'Quote');
    assert.ok(logged instanceof Uint8Array && logged.length === 16, `logged as ${String(logged)}`);
    assert.equal(idOf(logged, 'Quote'), quoteId);
    // Bytes would give these back changed (lowercased, another kind, without the suffix): they travel as they are.
    for (const id of [quoteId.toUpperCase().replace('QUOTE:', 'Quote:'), quoteId.replace('Quote:', 'Transaction:'), `${quoteId}#sandbox`, 'Quote:legacy-1', '']) {
      assert.equal(loggedId(id, 'Quote'), id);
      assert.equal(idOf(loggedId(id, 'Quote'), 'Quote'), id);
    }
  });
});
