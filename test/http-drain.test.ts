// Shutdown drains with a time limit: a client uploading slowly is cut off when the limit
// passes, instead of holding shutdown for as long as it likes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestService } from './support/service.js';
import { assertStatus, deadline } from './support/assertions.js';

const VERSION = '2025-10-13';

describe('drain', () => {
  it('resolves after its limit while an upload is unfinished, and closes that connection', async () => {
    const svc = await startTestService();
    try {
      assertStatus(await svc.request('GET', '/healthz'), 200);
      const sock = net.connect(svc.service.http.port, '127.0.0.1');
      const closed = new Promise<string>((resolve) => {
        let received = '';
        sock.on('data', (chunk: Buffer) => (received += chunk.toString()));
        sock.on('close', () => resolve(received));
        sock.on('error', () => undefined);
      });
      // Headers and the first bytes of a 100-byte body; the rest never comes.
      const started = new Promise<void>((resolve) => {
        sock.on('connect', () => {
          sock.write(
            `POST /${VERSION}/customers HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${svc.basic('sandbox')}\r\n` +
              'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"customerTy',
            () => resolve(),
          );
        });
      });
      await started;
      // The request is in flight once the server has seen it: a request behind it on
      // another connection is answered, so the upload's headers have been read.
      assertStatus(await svc.request('GET', '/healthz'), 200);
      // Without a limit drain would wait for the upload for ever; the deadline only keeps
      // a failure from hanging the suite.
      const outcome = await Promise.race([svc.service.http.drain(200).then(() => 'drained' as const), deadline(5000)]);
      assert.equal(outcome, 'drained');
      // The server closed the unfinished upload's connection, unanswered.
      assert.equal(await closed, '');
      assert.equal(sock.destroyed, true);
    } finally {
      await svc.stop();
    }
  });

  it('resolves at once when nothing is in flight, and later calls return the same promise', async () => {
    const svc = await startTestService();
    try {
      const first = svc.service.http.drain(60_000);
      assert.equal(svc.service.http.drain(60_000), first);
      await first;
    } finally {
      await svc.stop();
    }
  });
});
