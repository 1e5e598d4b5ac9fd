// OTP mail (src/wallet/mail.ts) as an engine effect: through a real SMTP server on
// loopback when SMTP_URL is set, else an .eml file in the outbox; the code is sealed in
// the logged payload, never in the clear in the log or in failure reports.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { open } from 'lmdb';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { ManualClock } from '../src/engine/clock.js';
import { retryDelayMs } from '../src/engine/engine.js';
import { decodeGroup } from '../src/engine/log.js';
import { MasterKey } from '../src/crypto/master-key.js';
import { configFromEnv } from '../src/config.js';
import { OTP_MAIL_EFFECT, otpMail, registerOtpMail } from '../src/wallet/mail.js';
import { newOtp, OtpHasher } from '../src/wallet/otp.js';
import type { EmbeddedWalletConfig } from '../actors/platform.js';
import { add, openCounterEngine, tempDir, waitFor } from './support/counter-machine.js';

const BRAND: EmbeddedWalletConfig = {
  appName: 'Acme Pay',
  otpLength: 12,
  expirationSeconds: 600,
  sendFromEmailAddress: 'login@acme.example',
  sendFromEmailSenderName: 'Acme Login',
  sessionLifetimeSeconds: 900,
  oidcIssuers: [],
  webauthn: { rpId: 'acme.example', rpName: 'Acme', origins: ['https://acme.example'] },
};

interface Received {
  from: string | undefined;
  to: string[];
  raw: string;
}

/** An SMTP server on loopback that keeps what it receives; `refuseNext` rejects that many RCPT TO. */
class MailCatcher {
  readonly received: Received[] = [];
  refuseNext = 0;
  readonly #server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo: (_address, _session, callback) => {
      if (this.refuseNext > 0) {
        this.refuseNext--;
        callback(Object.assign(new Error('mailbox busy, try later'), { responseCode: 451 }));
      } else callback();
    },
    onData: (stream: SMTPServerDataStream, session: SMTPServerSession, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const envelopeFrom = session.envelope.mailFrom;
        this.received.push({
          from: envelopeFrom === false ? undefined : envelopeFrom.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `smtp://127.0.0.1:${(this.#server.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** The code in a message body: the indented line of digits. */
function codeIn(raw: string): string | undefined {
  return /^ {4}(\d{4,12})$/m.exec(raw)?.[1];
}

async function loggedText(dir: string): Promise<string> {
  const root = open({ path: dir });
  const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
  let text = '';
  for (const { key, value } of log.getRange()) for (const entry of decodeGroup(key, value)) text += JSON.stringify(entry.events);
  await root.close();
  return text;
}

function mailEngine(dir: string, clock: ManualClock, masterKey: MasterKey, smtpUrl: string | undefined) {
  return openCounterEngine(dir, clock, {}, (engine) => registerOtpMail(engine, { dataDir: dir, smtpUrl, masterKey }));
}

describe('wallet-auth mail', () => {
  const catcher = new MailCatcher();
  let smtpUrl = '';
  const masterKey = new MasterKey(randomBytes(32));
  const hasher = new OtpHasher(masterKey);
  before(async () => {
    smtpUrl = await catcher.start();
  });
  after(async () => {
    await catcher.stop();
  });

  it('through SMTP: the mail arrives branded, the code in it matches, and the log holds it only sealed', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine } = await mailEngine(dir, clock, masterKey, smtpUrl);
    const { code, codeHash } = newOtp(12, hasher);
    const payload = otpMail({ to: 'Ada@Example.com', code, expiresAt: clock.now() + 600_000, config: BRAND }, masterKey);
    assert.equal(JSON.stringify(payload).includes(code), false);
    const before = catcher.received.length;
    await engine.exec(['x'], (at) => ({ events: [add('x', 1), engine.effect(OTP_MAIL_EFFECT, ['x'], payload, at)], reply: () => null }));
    await waitFor(() => catcher.received.length > before && engine.pendingEffects === 0, 'the mail sent');
    const mail = catcher.received.at(-1)!;
    assert.equal(mail.from, 'login@acme.example');
    assert.deepEqual(mail.to, ['Ada@example.com'], 'nodemailer lower-cases the domain');
    assert.match(mail.raw, /^From: Acme Login <login@acme\.example>$/m);
    assert.match(mail.raw, /^To: Ada@example\.com$/m);
    assert.match(mail.raw, /^Subject: Your Acme Pay verification code$/m);
    const received = codeIn(mail.raw);
    assert.equal(received, code);
    assert.equal(hasher.hash(received!), codeHash);
    await engine.close();
    assert.equal((await loggedText(dir)).includes(code), false, 'the plaintext code is not in the log');
    rmSync(dir, { recursive: true, force: true });
  });

  it('a relay that refuses is retried with backoff; the failure report carries no code', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine, reports } = await mailEngine(dir, clock, masterKey, smtpUrl);
    const { code } = newOtp(12, hasher);
    const payload = otpMail({ to: 'bob@example.com', code, expiresAt: clock.now() + 600_000, config: BRAND }, masterKey);
    catcher.refuseNext = 1;
    const before = catcher.received.length;
    await engine.exec(['x'], (at) => ({ events: [engine.effect(OTP_MAIL_EFFECT, ['x'], payload, at)], reply: () => null }));
    await waitFor(() => reports.some((line) => line.includes('failed (attempt 1')), 'the first attempt failed');
    assert.equal(catcher.received.length, before);
    assert.equal(reports.some((line) => line.includes(code)), false);
    clock.advance(retryDelayMs(1));
    await waitFor(() => catcher.received.length > before && engine.pendingEffects === 0, 'the retry sent');
    assert.equal(codeIn(catcher.received.at(-1)!.raw), code);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('without SMTP_URL: an .eml file (0600) in <data dir>/outbox, the same file again after a rerun', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine } = await mailEngine(dir, clock, masterKey, undefined);
    const { code } = newOtp(6, hasher);
    const payload = otpMail({ to: 'carol@example.com', code, expiresAt: clock.now() + 600_000, config: BRAND }, masterKey);
    const before = catcher.received.length;
    await engine.exec(['x'], (at) => ({ events: [engine.effect(OTP_MAIL_EFFECT, ['x'], payload, at)], reply: () => null }));
    const outbox = join(dir, 'outbox');
    await waitFor(() => engine.pendingEffects === 0, 'the mail written');
    const files = readdirSync(outbox);
    assert.equal(files.length, 1);
    assert.match(files[0]!, /^otp-\d+-[0-9a-f]{16}\.eml$/);
    const file = join(outbox, files[0]!);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(outbox).mode & 0o077, 0);
    const raw = readFileSync(file, 'utf8');
    assert.match(raw, /^From: Acme Login <login@acme\.example>$/m);
    assert.match(raw, /^To: carol@example\.com$/m);
    assert.equal(codeIn(raw), code);
    assert.equal(catcher.received.length, before, 'nothing went to SMTP');
    // At least once: the same payload run again rewrites its own file.
    await engine.exec(['x'], (at) => ({ events: [engine.effect(OTP_MAIL_EFFECT, ['x'], payload, at)], reply: () => null }));
    await waitFor(() => engine.pendingEffects === 0, 'the rerun done');
    assert.deepEqual(readdirSync(outbox), files);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a code already expired when the effect runs is not mailed', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine } = await mailEngine(dir, clock, masterKey, undefined);
    const payload = otpMail({ to: 'dan@example.com', code: newOtp(6, hasher).code, expiresAt: clock.now(), config: BRAND }, masterKey);
    await engine.exec(['x'], (at) => ({ events: [engine.effect(OTP_MAIL_EFFECT, ['x'], payload, at)], reply: () => null }));
    await waitFor(() => engine.pendingEffects === 0, 'the effect done');
    assert.throws(() => readdirSync(join(dir, 'outbox')), { code: 'ENOENT' });
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a sealed code opens only for its recipient and under its master key', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const other = new MasterKey(randomBytes(32));
    const { engine, reports } = await mailEngine(dir, clock, other, undefined);
    const sealed = otpMail({ to: 'erin@example.com', code: '123456', expiresAt: clock.now() + 600_000, config: BRAND }, masterKey);
    const moved = { ...otpMail({ to: 'erin@example.com', code: '123456', expiresAt: clock.now() + 600_000, config: BRAND }, other), to: 'mallory@example.com' };
    await engine.exec(['x'], (at) => ({
      events: [engine.effect(OTP_MAIL_EFFECT, ['x'], sealed, at), engine.effect(OTP_MAIL_EFFECT, ['x'], moved, at)],
      reply: () => null,
    }));
    await waitFor(() => reports.filter((line) => line.includes('failed (attempt 1')).length === 2, 'both refused');
    assert.throws(() => readdirSync(join(dir, 'outbox')), { code: 'ENOENT' });
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('SMTP_URL is read by configFromEnv: smtp or smtps only', () => {
    assert.equal(configFromEnv({}).smtpUrl, undefined);
    assert.equal(configFromEnv({ SMTP_URL: '' }).smtpUrl, undefined);
    assert.equal(configFromEnv({ SMTP_URL: 'smtps://u:p@relay.example.com:465' }).smtpUrl, 'smtps://u:p@relay.example.com:465');
    assert.throws(() => configFromEnv({ SMTP_URL: 'https://relay.example.com' }), /SMTP_URL must use smtp: or smtps:/);
    assert.throws(() => configFromEnv({ SMTP_URL: 'not a url' }), /SMTP_URL must be a URL/);
  });
});
