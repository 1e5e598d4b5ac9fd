// A sandbox environment record for tests that drive the domain without the service (token id
// `tok`; its keys are placeholders: nothing here signs).
import { newPlatformEnv, type PlatformEnv } from '../../actors/platform.js';
import { newId } from '../../src/engine/ids.js';

/** A new sandbox environment of a new platform, created at `at`. */
export function sandboxEnv(at: number): PlatformEnv {
  return newPlatformEnv(
    {
      platformId: newId('Platform', at),
      environment: 'sandbox',
      token: { tokenId: 'tok', secretHash: '0'.repeat(64) },
      umaDomain: 'sandbox.uma.test',
      isRegulatedFinancialInstitution: false,
      webhookPublicKey: '04',
      webhookPrivateKeySealed: new Uint8Array(0),
    },
    at,
  );
}
