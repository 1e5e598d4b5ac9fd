// The log entry POST /customers writes for a sandbox individual, made by the real decision
// code (customer plus its USD, USDC and USDB accounts), so the log bench encodes exactly
// what the service writes.
import { decideCreateCustomer, openedCustomerId, type Customer } from '../../actors/customer.js';
import { newPlatformEnv, type PlatformEnv } from '../../actors/platform.js';
import { World, type DomainEvent } from '../../actors/world.js';

/** A sandbox environment as a new platform gets it (its keys are placeholders: nothing here signs). */
export function samplePlatformEnv(platformId: string, at: number): PlatformEnv {
  return newPlatformEnv(
    {
      platformId,
      environment: 'sandbox',
      token: { tokenId: 'tok_bench', secretHash: '0'.repeat(64) },
      umaDomain: 'sandbox.uma.test',
      isRegulatedFinancialInstitution: false,
      webhookPublicKey: `04${'0'.repeat(128)}`,
      webhookPrivateKeySealed: new Uint8Array(61),
    },
    at,
  );
}

const env = samplePlatformEnv('Platform:019a0000-0000-7000-8000-000000000000', Date.now());

const emptyDirectory = { umaOwner: () => undefined };

export type SampleEvent = DomainEvent;

export function sampleCustomerEvent(at: number): SampleEvent {
  return decideCreateCustomer(env, { customerType: 'INDIVIDUAL' }, emptyDirectory, at)[0]!;
}

/** The customer record the service holds (and snapshots) for a sandbox individual created at `at`. */
export function sampleCustomerRecord(at: number): Customer {
  const world = new World();
  world.apply({ type: 'platform.env.created', env }, at);
  const event = decideCreateCustomer(env, { customerType: 'INDIVIDUAL' }, world.customers, at)[0]!;
  world.apply(event, at);
  const customer = world.customers.get(openedCustomerId(event));
  if (customer === undefined) throw new Error('the sample customer was not created');
  return customer;
}
