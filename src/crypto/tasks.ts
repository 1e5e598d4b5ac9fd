// The operations the crypto pool runs, as plain-data tasks. The same dispatcher runs
// inline on the calling thread or inside a worker (worker.ts). Failures come back as
// descriptors rather than thrown errors, because worker_threads' structured clone drops
// the class and the custom fields of an Error; the pool turns them back into the typed
// errors of errors.ts.
import { BundleError, InvalidPublicKeyError } from './errors.js';
import { createExportBundle } from './export-bundle.js';
import { issueSessionKey, type IssuedSessionKey } from './session-bundle.js';
import { verifyStamp, type StampVerification } from './stamp.js';
import { signWebhookBody } from './webhook-signature.js';

export interface VerifyStampTask {
  readonly op: 'verifyStamp';
  readonly header: string | undefined;
  readonly payload: string | Uint8Array;
  readonly expectedPublicKeys?: readonly string[];
}

export interface IssueSessionKeyTask {
  readonly op: 'issueSessionKey';
  readonly clientPublicKey: string;
}

export interface CreateExportBundleTask {
  readonly op: 'createExportBundle';
  readonly clientPublicKey: string;
  readonly mnemonic: string;
  readonly organizationId: string;
  /** Production signer; null for an unsigned (sandbox) bundle. */
  readonly signer: { readonly privateKey: Uint8Array; readonly publicKey: Uint8Array } | null;
}

export interface SignWebhookTask {
  readonly op: 'signWebhook';
  readonly body: string | Uint8Array;
  readonly privateKey: Uint8Array;
}

export type CryptoTask = VerifyStampTask | IssueSessionKeyTask | CreateExportBundleTask | SignWebhookTask;
export type CryptoOp = CryptoTask['op'];

export interface CryptoTaskResults {
  verifyStamp: StampVerification;
  issueSessionKey: IssuedSessionKey;
  createExportBundle: string;
  signWebhook: string;
}

export interface ErrorDescriptor {
  readonly name: string;
  readonly message: string;
  readonly reason?: string;
}

export type TaskOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ErrorDescriptor };

function execute(task: CryptoTask): CryptoTaskResults[CryptoOp] {
  switch (task.op) {
    case 'verifyStamp':
      return verifyStamp(task.expectedPublicKeys === undefined
        ? { header: task.header, payload: task.payload }
        : { header: task.header, payload: task.payload, expectedPublicKeys: task.expectedPublicKeys });
    case 'issueSessionKey':
      return issueSessionKey(task.clientPublicKey);
    case 'createExportBundle':
      return createExportBundle({
        clientPublicKey: task.clientPublicKey,
        mnemonic: task.mnemonic,
        organizationId: task.organizationId,
        signer: task.signer,
      });
    case 'signWebhook':
      return signWebhookBody(task.body, task.privateKey);
  }
}

export function runCryptoTask(task: CryptoTask): TaskOutcome<CryptoTaskResults[CryptoOp]> {
  try {
    return { ok: true, value: execute(task) };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    const reason = 'reason' in error && typeof error.reason === 'string' ? error.reason : undefined;
    return { ok: false, error: reason === undefined ? { name: error.name, message: error.message } : { name: error.name, message: error.message, reason } };
  }
}

/** Turns a descriptor back into the typed error it came from. */
export function rehydrateError(descriptor: ErrorDescriptor): Error {
  const reason = descriptor.reason ?? descriptor.message;
  switch (descriptor.name) {
    case 'InvalidPublicKeyError':
      return new InvalidPublicKeyError(reason);
    case 'BundleError':
      return new BundleError(reason);
    case 'TypeError':
      return new TypeError(descriptor.message);
    case 'RangeError':
      return new RangeError(descriptor.message);
    default: {
      const e = new Error(descriptor.message);
      e.name = descriptor.name;
      return e;
    }
  }
}
