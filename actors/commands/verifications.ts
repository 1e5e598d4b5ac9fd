// Verification commands (CONTRACT.md; SERVICE_SPEC parts 3 and 4): POST /verifications.
// A verification of a customer is the customer's record (it reads the customer's
// kycStatus), one of a business alone the environment's.
import type { Environment } from '../platform.js';
import { decideCreateVerification, type Verification, type VerificationInput } from '../verification.js';
import type { DomainCommand } from '../world.js';
import { customerIn } from './customers.js';

export interface CreateVerificationInput {
  envId: string;
  /** The environment's kind (fixed at its creation): the sandbox decides outcomes by its test suffixes. */
  environment: Environment;
  verification: VerificationInput;
}

export const createVerification: DomainCommand<CreateVerificationInput, Verification> = {
  name: 'verification.create',
  actors: ({ envId, verification }, world) => [verification.customerId === undefined ? envId : customerIn(world, envId, verification.customerId).id],
  decide: ({ envId, environment, verification }, world, at) => {
    const customer = verification.customerId === undefined ? undefined : customerIn(world, envId, verification.customerId);
    const events = decideCreateVerification(envId, environment, verification, customer, at);
    const id = events[0]!.verification.id;
    return { events, reply: () => world.verifications.inEnv(envId, id)! };
  },
};
