// Verifications (CONTRACT.md "Money": POST /verifications; SERVICE_SPEC part 3): KYB of a
// business and KYC of its beneficial owners, or the standing of an existing customer.
// Sandbox outcomes follow the spec's suffix rules: the last 3 characters of
// `businessInfo.registrationNumber` decide kybStatus and those of each owner's
// `personalInfo.lastName` its kycStatus: 001 PENDING, 002 REJECTED, anything else
// APPROVED. Production has no simulated checks: what is submitted waits as PENDING.
//
// A verification is written once and never changes, so it needs no actor but its own id.
import { newId } from '../src/engine/ids.js';
import { sandboxCheckOutcome, type Customer, type KybStatus } from './customer.js';
import { invalidField } from './errors.js';
import type { Environment } from './platform.js';
import { RecordMap, type Appliers, type RecordKind } from './registry.js';
import { isoTime } from './iso-time.js';

export type CheckStatus = 'PENDING' | 'APPROVED' | 'REJECTED';
export const CHECK_STATUSES: readonly CheckStatus[] = ['PENDING', 'APPROVED', 'REJECTED'];
export type VerificationStatus = CheckStatus | 'UNVERIFIED';
export const VERIFICATION_STATUSES: readonly VerificationStatus[] = ['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED'];

/** What a KYB check is given about a business (the published schema holds the formats). */
export interface BusinessInfo {
  readonly registrationNumber: string;
  readonly legalName?: string;
  readonly doingBusinessAs?: string;
  /** ISO 3166-1 alpha-2 */
  readonly country?: string;
  readonly taxId?: string;
  /** YYYY-MM-DD */
  readonly incorporatedOn?: string;
}

/** What a KYC check is given about a person. */
export interface PersonalInfo {
  readonly firstName: string;
  readonly lastName: string;
  readonly middleName?: string;
  /** YYYY-MM-DD */
  readonly birthDate?: string;
  /** ISO 3166-1 alpha-2 */
  readonly nationality?: string;
  readonly email?: string;
}

export interface BeneficialOwner {
  readonly personalInfo: PersonalInfo;
  readonly kycStatus: CheckStatus;
}

export interface Verification {
  /** `Verification:<uuid>` */
  readonly id: string;
  readonly envId: string;
  readonly customerId?: string;
  readonly verificationStatus: VerificationStatus;
  readonly businessInfo?: BusinessInfo;
  readonly kybStatus?: CheckStatus;
  readonly beneficialOwners?: readonly BeneficialOwner[];
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type VerificationEvent = { type: 'verification.created'; verification: Verification };

export interface VerificationInput {
  customerId?: string;
  businessInfo?: BusinessInfo;
  beneficialOwners?: ReadonlyArray<{ personalInfo: PersonalInfo }>;
}

/** A customer's standing as a verification status: a business's HOLD waits, as PENDING does. */
function standingOf(customer: Customer): VerificationStatus {
  const status: KybStatus | undefined = customer.kybStatus ?? customer.kycStatus;
  if (status === undefined) throw new Error(`customer ${customer.id} has neither kycStatus nor kybStatus`);
  return status === 'HOLD' ? 'PENDING' : status;
}

/** Any rejection rejects the whole; else anything pending keeps it pending. */
function overall(statuses: readonly VerificationStatus[]): VerificationStatus {
  if (statuses.includes('REJECTED')) return 'REJECTED';
  if (statuses.includes('UNVERIFIED')) return 'UNVERIFIED';
  if (statuses.includes('PENDING')) return 'PENDING';
  return 'APPROVED';
}

/**
 * A new verification, of a business or of a customer (or both). `customer` (already
 * checked to belong to the environment) brings its own kycStatus when no business is
 * submitted with it.
 */
export function decideCreateVerification(envId: string, environment: Environment, input: VerificationInput, customer: Customer | undefined, at: number): VerificationEvent[] {
  if (input.customerId === undefined && input.businessInfo === undefined) throw invalidField('businessInfo', 'businessInfo or customerId is required');
  const check = (value: string): CheckStatus => (environment === 'sandbox' ? sandboxCheckOutcome(value) : 'PENDING');
  const statuses: VerificationStatus[] = [];
  let verification: Verification = { id: newId('Verification', at), envId, verificationStatus: 'PENDING', createdAt: at, updatedAt: at };
  if (customer !== undefined) verification = { ...verification, customerId: customer.id };
  if (input.businessInfo !== undefined) {
    const kybStatus = check(input.businessInfo.registrationNumber);
    statuses.push(kybStatus);
    verification = { ...verification, businessInfo: { ...input.businessInfo }, kybStatus };
  } else if (customer !== undefined) {
    // No business submitted: the customer's own standing (a person's KYC, a business's KYB) is the answer.
    statuses.push(standingOf(customer));
  }
  if (input.beneficialOwners !== undefined) {
    const owners = input.beneficialOwners.map((owner) => ({ personalInfo: { ...owner.personalInfo }, kycStatus: check(owner.personalInfo.lastName) }));
    statuses.push(...owners.map((o) => o.kycStatus));
    verification = { ...verification, beneficialOwners: owners };
  }
  return [{ type: 'verification.created', verification: { ...verification, verificationStatus: overall(statuses) } }];
}

export class Verifications implements RecordKind<Verification, VerificationEvent> {
  readonly idPrefix = 'Verification:';
  actorOf(verification: Verification): string {
    return verification.customerId ?? verification.envId;
  }
  readonly #records = new RecordMap<Verification>();
  readonly records: ReadonlyMap<string, Verification> = this.#records;

  readonly appliers: Appliers<VerificationEvent> = {
    'verification.created': (event) => {
      if (this.#records.has(event.verification.id)) throw new Error(`verification ${event.verification.id} exists already`);
      this.restore(event.verification);
    },
  };

  restore(record: Verification): void {
    this.#records.set(record.id, record);
  }

  checkInvariants(): string[] {
    return [];
  }

  /** The verification if it belongs to the environment. */
  inEnv(envId: string, id: string): Verification | undefined {
    const record = this.#records.get(id);
    return record?.envId === envId ? record : undefined;
  }
}

export interface VerificationView {
  id: string;
  customerId?: string;
  verificationStatus: VerificationStatus;
  businessInfo?: BusinessInfo;
  kybStatus?: CheckStatus;
  beneficialOwners?: Array<{ personalInfo: PersonalInfo; kycStatus: CheckStatus }>;
  /** Always empty: problems with the input are refused with a 400 instead. */
  errors: Array<{ field: string; message: string }>;
  createdAt: string;
  updatedAt: string;
}

export function renderVerification(v: Verification): VerificationView {
  const view: VerificationView = {
    id: v.id,
    verificationStatus: v.verificationStatus,
    errors: [],
    createdAt: isoTime(v.createdAt),
    updatedAt: isoTime(v.updatedAt),
  };
  if (v.customerId !== undefined) view.customerId = v.customerId;
  if (v.businessInfo !== undefined) view.businessInfo = { ...v.businessInfo };
  if (v.kybStatus !== undefined) view.kybStatus = v.kybStatus;
  if (v.beneficialOwners !== undefined) view.beneficialOwners = v.beneficialOwners.map((o) => ({ personalInfo: { ...o.personalInfo }, kycStatus: o.kycStatus }));
  return view;
}
