// Verification commands (CONTRACT.md; SERVICE_SPEC parts 3 and 4): POST /verifications.
// A verification of a customer is the customer's record (it reads the customer's
// kycStatus), one of a business alone the environment's. A business customer named alone
// (`{customerId}`, the vendor's form) is verified from what it has on file: its owners and
// documents, which its actor holds (commands/business-verification.ts).
import type { Customer } from '../customer.js';
import type { Environment } from '../platform.js';
import { decideBusinessVerification, decideCreateVerification, type BusinessFile, type Verification, type VerificationInput } from '../verification.js';
import type { DomainCommand, World } from '../world.js';
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
    const events = customer !== undefined && isBusinessOnFile(customer, verification) ? decideBusinessVerification(customer, environment, businessFile(world, customer), at) : decideCreateVerification(envId, environment, verification, customer, at);
    const id = events[0]!.verification.id;
    return { events, reply: () => world.verifications.inEnv(envId, id)! };
  },
};

/** A business customer named with nothing submitted beside it: verified from what it has on file. */
export function isBusinessOnFile(customer: Customer, input: VerificationInput): boolean {
  return customer.customerType === 'BUSINESS' && input.businessInfo === undefined && input.beneficialOwners === undefined;
}

function businessFile(world: World, business: Customer): BusinessFile {
  const owners = world.beneficialOwners.idsOf(business.id).map((id) => world.beneficialOwners.get(id)!);
  return { owners, documentTypes: (holderId) => world.documents.typesHeldBy(holderId) };
}
