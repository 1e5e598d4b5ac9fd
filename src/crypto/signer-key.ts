// Long-lived service P-256 keys kept in the data directory, sealed under the MasterKey:
// the export signer (whose public key clients pass to decryptExportBundle as the
// signer override) is the intended use. The file holds base64 of the sealed scalar and
// is created with mode 0600; a file readable by others is tightened back to 0600.
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MasterKey } from './master-key.js';
import { generateP256KeyPair, keyPairFromPrivateKey, type P256KeyPair } from './p256.js';
import { openPrivateKey, sealPrivateKey } from './wallet-secrets.js';

export const EXPORT_SIGNER_KEY_NAME = 'export-signer';

/** Loads `<dataDir>/<name>.key`, creating a fresh key pair there on first use. */
export function loadOrCreateServiceKey(dataDir: string, masterKey: MasterKey, name: string = EXPORT_SIGNER_KEY_NAME): P256KeyPair {
  if (!/^[a-z0-9-]+$/.test(name)) throw new TypeError('service key name must be lowercase letters, digits and dashes');
  const path = join(dataDir, `${name}.key`);
  if (!existsSync(path)) {
    const fresh = generateP256KeyPair();
    try {
      writeFileSync(path, sealPrivateKey(masterKey, name, fresh.privateKey) + '\n', { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // Another process created it between the check and the write: use theirs.
      if (!(err instanceof Error && 'code' in err && err.code === 'EEXIST')) throw err;
    }
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  return keyPairFromPrivateKey(openPrivateKey(masterKey, name, readFileSync(path, 'utf8').trim()));
}
