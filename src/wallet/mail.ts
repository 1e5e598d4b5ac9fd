// OTP mail for EMAIL_OTP credentials, sent as an engine effect: after the decision that
// issued the code is durable, and again after a restart until it went out (at least once).
// Through SMTP when SMTP_URL is set; otherwise each message is written as an .eml file in
// `<data dir>/outbox/` (mode 0600), for development and for operators without a relay.
//
// The effect payload is written to the log like any event, so the code in it is sealed
// under the master key (AES-256-GCM, bound to the recipient address): a plaintext code in
// the log would be a live secret at rest. `run` opens it just before sending.
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Engine } from '../engine/engine.js';
import type { DomainEvent } from '../engine/state-machine.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { EmbeddedWalletConfig } from '../../actors/platform.js';
import { isoTime } from '../../actors/iso-time.js';

export const OTP_MAIL_EFFECT = 'wallet.otp-mail';
export const OUTBOX_DIR = 'outbox';

/** SMTP waits: a stalled relay fails the attempt (the engine retries with backoff) instead of holding a run slot. */
const SMTP_CONNECT_TIMEOUT_MS = 10_000;
const SMTP_SOCKET_TIMEOUT_MS = 20_000;

/** The payload of a `wallet.otp-mail` effect. */
export interface OtpMail {
  readonly to: string;
  /** The code sealed under the master key (aad: sealAad(to)), base64url. */
  readonly sealedCode: string;
  /** Epoch ms; a code past it is not mailed any more (a retry after expiry would only confuse). */
  readonly expiresAt: number;
  readonly appName: string;
  readonly fromAddress: string;
  readonly fromName: string;
}

function sealAad(to: string): string {
  return `wallet.otp-mail:${to.toLowerCase()}`;
}

/** The effect payload for mailing `code` to `to`, branded by the environment's embeddedWalletConfig. */
export function otpMail(input: { to: string; code: string; expiresAt: number; config: EmbeddedWalletConfig }, masterKey: MasterKey): OtpMail {
  return {
    to: input.to,
    sealedCode: Buffer.from(masterKey.seal(Buffer.from(input.code, 'utf8'), sealAad(input.to))).toString('base64url'),
    expiresAt: input.expiresAt,
    appName: input.config.appName,
    fromAddress: input.config.sendFromEmailAddress,
    fromName: input.config.sendFromEmailSenderName,
  };
}

export interface OtpMailOptions {
  dataDir: string;
  /** smtp:// or smtps:// URL (credentials may be in it); undefined writes .eml files. */
  smtpUrl: string | undefined;
  /** The key itself, or a getter for services that load it after the engine is opened (a run before then throws and is retried). */
  masterKey: MasterKey | (() => MasterKey);
}

export type OtpMailOutcome = { sent: 'smtp'; messageId: string } | { sent: 'outbox'; file: string } | { sent: 'expired' };

/** Registers the runner of `wallet.otp-mail`; call before `engine.open()`. */
export function registerOtpMail<E extends DomainEvent, T>(engine: Engine<E, T>, options: OtpMailOptions): void {
  const send = options.smtpUrl === undefined ? outboxSender(join(options.dataDir, OUTBOX_DIR)) : smtpSender(options.smtpUrl);
  const masterKey = (): MasterKey => (typeof options.masterKey === 'function' ? options.masterKey() : options.masterKey);
  engine.onEffect<OtpMail, OtpMailOutcome>(OTP_MAIL_EFFECT, {
    run: async (mail) => {
      if (engine.clock.now() >= mail.expiresAt) return { sent: 'expired' };
      const code = Buffer.from(masterKey().open(Buffer.from(mail.sealedCode, 'base64url'), sealAad(mail.to))).toString('utf8');
      return send(mail, otpMessage(mail, code));
    },
  });
}

interface Message {
  from: { name: string; address: string };
  to: string;
  subject: string;
  text: string;
}

function otpMessage(mail: OtpMail, code: string): Message {
  const expires = isoTime(mail.expiresAt).replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
  return {
    from: { name: mail.fromName, address: mail.fromAddress },
    to: mail.to,
    subject: `Your ${mail.appName} verification code`,
    text:
      `Your ${mail.appName} verification code is:\n\n    ${code}\n\n` +
      `It is valid until ${expires} and can be used once.\n` +
      `If you did not ask for it, ignore this message; never share the code with anyone.\n`,
  };
}

type Sender = (mail: OtpMail, message: Message) => Promise<OtpMailOutcome>;

/** nodemailer, loaded with the first message: a service that mails no code is spared its loading. */
let nodemailerModule: Promise<typeof import('nodemailer')> | undefined;
const nodemailer = (): Promise<typeof import('nodemailer')> => (nodemailerModule ??= import('nodemailer'));

function smtpSender(smtpUrl: string): Sender {
  // One transporter, no pool: each message opens and closes its own connection, so there
  // is nothing to close when the service stops.
  let transport: Transporter | undefined;
  return async (_mail, message) => {
    transport ??= (await nodemailer()).createTransport({
      url: smtpUrl,
      connectionTimeout: SMTP_CONNECT_TIMEOUT_MS,
      greetingTimeout: SMTP_CONNECT_TIMEOUT_MS,
      socketTimeout: SMTP_SOCKET_TIMEOUT_MS,
    });
    const info = await transport.sendMail(message);
    return { sent: 'smtp', messageId: info.messageId };
  };
}

/**
 * Builds the same RFC 5322 message nodemailer would send and writes it to the outbox. The
 * file name comes from the sealed payload, so a run repeated after a crash rewrites the same
 * file instead of adding one; it is written aside and renamed, so a reader never sees half a
 * message. The outbox grows by one small file per code (codes are rate limited per
 * credential); clearing it is the operator's job.
 */
function outboxSender(dir: string): Sender {
  let builder: Transporter<{ message: unknown }> | undefined;
  return async (mail, message) => {
    builder ??= (await nodemailer()).createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
    const info = await builder.sendMail(message);
    // `buffer: true` makes the message a Buffer rather than a stream.
    if (!Buffer.isBuffer(info.message)) throw new Error('stream transport returned no buffered message');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const name = `otp-${mail.expiresAt}-${createHash('sha256').update(mail.sealedCode).digest('hex').slice(0, 16)}.eml`;
    const file = join(dir, name);
    const partial = `${file}.partial`;
    writeFileSync(partial, info.message, { mode: 0o600 });
    renameSync(partial, file);
    return { sent: 'outbox', file };
  };
}
