// Beneficial owners of a business customer (issue 39; vendor createBeneficialOwner and its
// neighbours): the people who own a quarter or more of it, control it or sit on its board.
// A business verification (actors/verification.ts) asks for at least one UBO and one
// CONTROL_PERSON among them, and an identity document of each. Each owner goes through KYC
// as it is created or renamed: the sandbox decides by the spec's suffix rule on its last
// name (001 PENDING, 002 REJECTED, else APPROVED); production waits as PENDING.
//
// An owner is held by its business's actor: the business's verification reads them all.
import { newId } from '../src/engine/ids.js';
import { sandboxCheckOutcome, type Customer } from './customer.js';
import { invalidField } from './errors.js';
import type { Environment } from './platform.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export const OWNER_ROLES = ['UBO', 'DIRECTOR', 'COMPANY_OFFICER', 'CONTROL_PERSON', 'TRUSTEE', 'GENERAL_PARTNER'] as const;
export type OwnerRole = (typeof OWNER_ROLES)[number];
export const ID_TYPES = ['SSN', 'ITIN', 'EIN', 'NON_US_TAX_ID'] as const;
export type IdType = (typeof ID_TYPES)[number];
export type OwnerKycStatus = 'PENDING' | 'APPROVED' | 'REJECTED';

export interface OwnerAddress {
  readonly line1: string;
  readonly line2?: string;
  readonly city?: string;
  readonly state?: string;
  readonly postalCode: string;
  /** ISO 3166-1 alpha-2 */
  readonly country: string;
}

/** What the vendor's BeneficialOwnerPersonalInfo holds; the first seven are required on create. */
export interface OwnerPersonalInfo {
  readonly firstName: string;
  readonly lastName: string;
  /** YYYY-MM-DD */
  readonly birthDate: string;
  readonly nationality: string;
  readonly address: OwnerAddress;
  readonly idType: IdType;
  readonly identifier: string;
  readonly middleName?: string;
  readonly email?: string;
  readonly phoneNumber?: string;
  readonly countryOfIssuance?: string;
}

export interface BeneficialOwner {
  /** `BeneficialOwner:<uuid>` */
  readonly id: string;
  readonly envId: string;
  /** The business customer it belongs to. */
  readonly customerId: string;
  readonly roles: readonly OwnerRole[];
  readonly ownershipPercentage: number;
  readonly personalInfo: OwnerPersonalInfo;
  readonly kycStatus: OwnerKycStatus;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface OwnerInput {
  roles: readonly OwnerRole[];
  ownershipPercentage: number;
  personalInfo: OwnerPersonalInfo;
}

/** A PATCH: only what is given changes; personalInfo merges field by field. */
export interface OwnerPatch {
  roles?: readonly OwnerRole[];
  ownershipPercentage?: number;
  personalInfo?: Partial<OwnerPersonalInfo>;
}

export type BeneficialOwnerEvent = { type: 'beneficialOwner.created'; owner: BeneficialOwner } | { type: 'beneficialOwner.updated'; owner: BeneficialOwner };

function kycOf(environment: Environment, lastName: string): OwnerKycStatus {
  return environment === 'sandbox' ? sandboxCheckOutcome(lastName) : 'PENDING';
}

/** A new owner of `business`, which must be a BUSINESS customer (a person has no owners). */
export function decideCreateOwner(business: Customer, environment: Environment, input: OwnerInput, at: number): BeneficialOwnerEvent[] {
  if (business.customerType !== 'BUSINESS') throw invalidField('customerId', `${business.id} is an INDIVIDUAL customer: only a BUSINESS has beneficial owners`);
  const owner: BeneficialOwner = {
    id: newId('BeneficialOwner', at),
    envId: business.envId,
    customerId: business.id,
    roles: [...new Set(input.roles)],
    ownershipPercentage: input.ownershipPercentage,
    personalInfo: { ...input.personalInfo, address: { ...input.personalInfo.address } },
    kycStatus: kycOf(environment, input.personalInfo.lastName),
    createdAt: at,
    updatedAt: at,
  };
  return [{ type: 'beneficialOwner.created', owner }];
}

/** The owner with `patch` applied; a new last name is checked again. */
export function decideUpdateOwner(owner: BeneficialOwner, environment: Environment, patch: OwnerPatch, at: number): BeneficialOwnerEvent[] {
  const personalInfo: OwnerPersonalInfo = { ...owner.personalInfo, ...patch.personalInfo };
  const renamed = personalInfo.lastName !== owner.personalInfo.lastName;
  const updated: BeneficialOwner = {
    ...owner,
    roles: patch.roles === undefined ? owner.roles : [...new Set(patch.roles)],
    ownershipPercentage: patch.ownershipPercentage ?? owner.ownershipPercentage,
    personalInfo,
    kycStatus: renamed ? kycOf(environment, personalInfo.lastName) : owner.kycStatus,
    updatedAt: at,
  };
  return [{ type: 'beneficialOwner.updated', owner: updated }];
}

export class BeneficialOwners implements RecordKind<BeneficialOwner, BeneficialOwnerEvent> {
  readonly idPrefix = 'BeneficialOwner:';
  readonly #records = new RecordMap<BeneficialOwner>();
  readonly records: ReadonlyMap<string, BeneficialOwner> = this.#records;
  readonly #byCustomer = new Map<string, SortedIds>();

  actorOf(owner: BeneficialOwner): string {
    return owner.customerId;
  }

  readonly appliers: Appliers<BeneficialOwnerEvent> = {
    'beneficialOwner.created': (event) => {
      if (this.#records.has(event.owner.id)) throw new Error(`beneficial owner ${event.owner.id} exists already`);
      this.restore(event.owner);
    },
    'beneficialOwner.updated': (event) => {
      if (!this.#records.has(event.owner.id)) throw new Error(`beneficial owner ${event.owner.id} does not exist`);
      this.#records.set(event.owner.id, event.owner);
    },
  };

  restore(owner: BeneficialOwner): void {
    this.#records.set(owner.id, owner);
    bucket(this.#byCustomer, owner.customerId).insert(owner.id);
  }

  checkInvariants(): string[] {
    return [];
  }

  get(id: string): BeneficialOwner | undefined {
    return this.#records.get(id);
  }

  /** The owner if it belongs to the environment. */
  inEnv(envId: string, id: string): BeneficialOwner | undefined {
    const owner = this.#records.get(id);
    return owner?.envId === envId ? owner : undefined;
  }

  /** The business's owners' ids, oldest first. */
  idsOf(customerId: string): readonly string[] {
    return this.#byCustomer.get(customerId)?.ids ?? [];
  }
}

export interface BeneficialOwnerView {
  id: string;
  customerId: string;
  roles: OwnerRole[];
  ownershipPercentage: number;
  personalInfo: OwnerPersonalInfo;
  kycStatus: OwnerKycStatus;
  createdAt: string;
  updatedAt: string;
}

export function renderOwner(owner: BeneficialOwner): BeneficialOwnerView {
  return {
    id: owner.id,
    customerId: owner.customerId,
    roles: [...owner.roles],
    ownershipPercentage: owner.ownershipPercentage,
    personalInfo: { ...owner.personalInfo, address: { ...owner.personalInfo.address } },
    kycStatus: owner.kycStatus,
    createdAt: isoTime(owner.createdAt),
    updatedAt: isoTime(owner.updatedAt),
  };
}
