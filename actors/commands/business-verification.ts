// Business verification commands (issue 39, CONTRACT.md "Today's clients, second wave"):
// beneficial owners and documents, each held by the actor of the business customer they
// concern, so that the business's verification (commands/verifications.ts) reads them all.
// A document's bytes are in the document store before its command runs: the command gets
// them as a verified fact (`StoredFile`) and only names them.
import { decideCreateOwner, decideUpdateOwner, type BeneficialOwner, type OwnerInput, type OwnerPatch } from '../beneficial-owner.js';
import { decideReplaceDocument, decideUploadDocument, type DocumentDetails, type DocumentHolder, type StoredFile, type VerificationDocument } from '../document.js';
import { notFound } from '../errors.js';
import type { Environment } from '../platform.js';
import type { DomainCommand, World } from '../world.js';
import { customerIn } from './customers.js';

export function ownerIn(world: World, envId: string, id: string, field = 'beneficialOwnerId'): BeneficialOwner {
  const owner = world.beneficialOwners.inEnv(envId, id);
  if (owner === undefined) throw notFound(field, 'beneficial owner', id);
  return owner;
}

export function documentIn(world: World, envId: string, id: string, field = 'documentId'): VerificationDocument {
  const document = world.documents.inEnv(envId, id);
  if (document === undefined) throw notFound(field, 'document', id);
  return document;
}

/** A document's holder by id: a customer of the environment or one of its businesses' owners; else a 404 naming documentHolder. */
export function holderIn(world: World, envId: string, holderId: string): DocumentHolder {
  if (holderId.startsWith(world.beneficialOwners.idPrefix)) {
    const owner = ownerIn(world, envId, holderId, 'documentHolder');
    return { id: owner.id, envId, customerId: owner.customerId };
  }
  const customer = customerIn(world, envId, holderId, 'documentHolder');
  return { id: customer.id, envId, customerId: customer.id };
}

export const createBeneficialOwner: DomainCommand<{ envId: string; environment: Environment; customerId: string; owner: OwnerInput }, BeneficialOwner> = {
  name: 'beneficialOwner.create',
  actors: ({ envId, customerId }, world) => [customerIn(world, envId, customerId).id],
  decide: ({ envId, environment, customerId, owner }, world, at) => {
    const business = customerIn(world, envId, customerId);
    const events = decideCreateOwner(business, environment, owner, at);
    const id = (events[0] as { owner: BeneficialOwner }).owner.id;
    return { events, reply: () => world.beneficialOwners.get(id)! };
  },
};

export const updateBeneficialOwner: DomainCommand<{ envId: string; environment: Environment; ownerId: string; patch: OwnerPatch }, BeneficialOwner> = {
  name: 'beneficialOwner.update',
  actors: ({ envId, ownerId }, world) => [ownerIn(world, envId, ownerId).customerId],
  decide: ({ envId, environment, ownerId, patch }, world, at) => {
    const owner = ownerIn(world, envId, ownerId);
    const events = decideUpdateOwner(owner, environment, patch, at);
    return { events, reply: () => world.beneficialOwners.get(ownerId)! };
  },
};

export const uploadDocument: DomainCommand<{ envId: string; holderId: string; details: DocumentDetails; file: StoredFile }, VerificationDocument> = {
  name: 'document.upload',
  actors: ({ envId, holderId }, world) => [holderIn(world, envId, holderId).customerId],
  decide: ({ envId, holderId, details, file }, world, at) => {
    const events = decideUploadDocument(holderIn(world, envId, holderId), details, file, at);
    const id = (events[0] as { document: VerificationDocument }).document.id;
    return { events, reply: () => world.documents.get(id)! };
  },
};

/** Replaces a document's bytes and details; replies with the document and the bytes it no longer names (the route frees them). */
export const replaceDocument: DomainCommand<{ envId: string; documentId: string; details: DocumentDetails; file: StoredFile }, { document: VerificationDocument; replaced: StoredFile }> = {
  name: 'document.replace',
  actors: ({ envId, documentId }, world) => [documentIn(world, envId, documentId).customerId],
  decide: ({ envId, documentId, details, file }, world, at) => {
    const document = documentIn(world, envId, documentId);
    const events = decideReplaceDocument(document, details, file, at);
    return { events, reply: () => ({ document: world.documents.get(documentId)!, replaced: document.file }) };
  },
};

/** Deletes a document; replies with the bytes it named (the route frees them once the entry is durable). */
export const deleteDocument: DomainCommand<{ envId: string; documentId: string }, StoredFile> = {
  name: 'document.delete',
  actors: ({ envId, documentId }, world) => [documentIn(world, envId, documentId).customerId],
  decide: ({ envId, documentId }, world) => {
    const document = documentIn(world, envId, documentId);
    return { events: [{ type: 'document.deleted', id: documentId }], reply: () => document.file };
  },
};
