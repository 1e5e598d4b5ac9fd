// Reads of business verification (issue 39): beneficial owners by business, documents by
// holder, verifications by customer and status, each within the calling environment.
import type { BeneficialOwner } from '../beneficial-owner.js';
import type { VerificationDocument } from '../document.js';
import { documentIn, ownerIn } from '../commands/business-verification.js';
import { customerIn } from '../commands/customers.js';
import { notFound } from '../errors.js';
import { paginate, type Page, type PageRequest } from '../page.js';
import { currentStatus, type Verification, type VerificationStatus } from '../verification.js';
import type { DomainQuery, World } from '../world.js';

export const beneficialOwner: DomainQuery<{ envId: string; ownerId: string }, BeneficialOwner> = ({ envId, ownerId }, world) => ownerIn(world, envId, ownerId);

/** One page of a business's owners; an unknown customer is a 404 naming customerId. */
export const beneficialOwnerPage: DomainQuery<{ envId: string; customerId: string; page: PageRequest }, Page<BeneficialOwner>> = ({ envId, customerId, page }, world) => {
  customerIn(world, envId, customerId);
  return paginate(world.beneficialOwners.idsOf(customerId), page, (id) => world.beneficialOwners.get(id), (o) => o);
};

export const verificationDocument: DomainQuery<{ envId: string; documentId: string }, VerificationDocument> = ({ envId, documentId }, world) => documentIn(world, envId, documentId);

/** One page of the environment's documents, or of one holder's (a holder of another environment has none). */
export const documentPage: DomainQuery<{ envId: string; holderId?: string; page: PageRequest }, Page<VerificationDocument>> = ({ envId, holderId, page }, world) => {
  const select = (id: string): VerificationDocument | undefined => world.documents.inEnv(envId, id);
  return paginate(world.documents.idsIn(envId, holderId), page, select, (d) => d);
};

/** A verification with its status as it reads now (a production review PATCH /customers has settled since). */
export interface VerificationNow {
  verification: Verification;
  status: VerificationStatus;
}

function now(world: World, verification: Verification): VerificationNow {
  const customer = verification.customerId === undefined ? undefined : world.customers.get(verification.customerId);
  return { verification, status: currentStatus(verification, customer) };
}

export const verificationNow: DomainQuery<{ envId: string; verificationId: string }, VerificationNow> = ({ envId, verificationId }, world) => {
  const found = world.verifications.inEnv(envId, verificationId);
  if (found === undefined) throw notFound('id', 'verification', verificationId);
  return now(world, found);
};

export const verificationPage: DomainQuery<{ envId: string; customerId?: string; status?: VerificationStatus; page: PageRequest }, Page<VerificationNow>> = ({ envId, customerId, status, page }, world) => {
  const select = (id: string): VerificationNow | undefined => {
    const found = world.verifications.inEnv(envId, id);
    if (found === undefined) return undefined;
    const read = now(world, found);
    return status === undefined || read.status === status ? read : undefined;
  };
  return paginate(world.verifications.idsIn(envId, customerId), page, select, (v) => v);
};
