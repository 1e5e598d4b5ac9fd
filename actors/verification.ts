// Verifications (CONTRACT.md "Money": POST /verifications; SERVICE_SPEC part 3): KYB of a
// business and KYC of its beneficial owners, or the standing of an existing customer.
// Sandbox outcomes follow the spec's suffix rules: the last 3 characters of
// `businessInfo.registrationNumber` decide kybStatus and those of each owner's
// `personalInfo.lastName` its kycStatus: 001 PENDING, 002 REJECTED, anything else
// APPROVED. Production has no simulated checks: what is submitted waits as PENDING.
//
// A business customer's verification (`{customerId}` alone, issue 39's second wave) lists
// in `errors` what is missing before the business can be checked: owners by role, documents
// by category, address fields (CONTRACT.md "Today's clients, second wave"); with nothing
// missing, the sandbox decides by the KYB suffix rule and production waits for review.
//
// A verification is written once and never changes, so it needs no actor but its own id.
import { newId } from '../src/engine/ids.js';
import { sandboxCheckOutcome, type Customer, type KybStatus } from './customer.js';
import type { BeneficialOwner } from './beneficial-owner.js';
import type { DocumentType } from './document.js';
import { invalidField } from './errors.js';
import type { Environment } from './platform.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export type CheckStatus = 'PENDING' | 'APPROVED' | 'REJECTED';
export const CHECK_STATUSES: readonly CheckStatus[] = ['PENDING', 'APPROVED', 'REJECTED'];
/** A business's verification: what is missing, then the vendor's review states. */
export type BusinessVerificationStatus = 'RESOLVE_ERRORS' | 'PENDING_MANUAL_REVIEW' | 'APPROVED' | 'REJECTED';
export type VerificationStatus = CheckStatus | 'UNVERIFIED' | BusinessVerificationStatus;
export const VERIFICATION_STATUSES: readonly VerificationStatus[] = ['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'RESOLVE_ERRORS', 'PENDING_MANUAL_REVIEW'];
export const BUSINESS_VERIFICATION_STATUSES: readonly BusinessVerificationStatus[] = ['RESOLVE_ERRORS', 'PENDING_MANUAL_REVIEW', 'APPROVED', 'REJECTED'];

export type MissingKind =
  | 'MISSING_FIELD'
  | 'MISSING_BENEFICIAL_OWNER'
  | 'MISSING_CONTROL_PERSON'
  | 'MISSING_LEGAL_PRESENCE_DOCUMENT'
  | 'MISSING_PROOF_OF_ADDRESS_DOCUMENT'
  | 'MISSING_IDENTITY_DOCUMENT';

/** One thing a business verification still needs (the vendor's VerificationError). */
export interface VerificationProblem {
  /** The Customer or BeneficialOwner it concerns. */
  readonly resourceId: string;
  readonly type: MissingKind;
  readonly field?: string;
  readonly acceptedDocumentTypes?: readonly DocumentType[];
  readonly reason: string;
}

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

/** An owner submitted inline with a business (today's clients' form). */
export interface SubmittedOwner {
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
  readonly beneficialOwners?: readonly SubmittedOwner[];
  /** A business customer's verification: what was missing when it was made (empty: complete). */
  readonly problems?: readonly VerificationProblem[];
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

const LEGAL_PRESENCE: readonly DocumentType[] = ['CERTIFICATE_OF_INCORPORATION', 'ARTICLES_OF_INCORPORATION', 'ARTICLES_OF_ASSOCIATION', 'STATE_REGISTRY_EXCERPT'];
const PROOF_OF_ADDRESS: readonly DocumentType[] = ['PROOF_OF_ADDRESS', 'UTILITY_BILL', 'RENT_OR_LEASE_AGREEMENT', 'ELECTRICITY_BILL', 'BANK_STATEMENT', 'TAX_RETURN'];
const IDENTITY: readonly DocumentType[] = ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID'];
/** The business's principal place of business: the address fields a KYB check cannot go without. */
const REQUIRED_ADDRESS_FIELDS = ['line1', 'postalCode', 'country'] as const;

/** What a business's verification reads: its owners, and the document types each holder has on file. */
export interface BusinessFile {
  owners: readonly BeneficialOwner[];
  documentTypes: (holderId: string) => ReadonlySet<DocumentType>;
}

/** Everything `business` still needs before it can be checked, in a stable order. */
export function missingForBusiness(business: Customer, file: BusinessFile): VerificationProblem[] {
  const problems: VerificationProblem[] = [];
  const id = business.id;
  for (const field of REQUIRED_ADDRESS_FIELDS) {
    if (business.address?.[field] === undefined) problems.push({ resourceId: id, type: 'MISSING_FIELD', field: `customer.address.${field}`, reason: `the business address needs ${field}` });
  }
  if (!file.owners.some((o) => o.roles.includes('UBO'))) problems.push({ resourceId: id, type: 'MISSING_BENEFICIAL_OWNER', reason: 'no beneficial owner with role UBO' });
  if (!file.owners.some((o) => o.roles.includes('CONTROL_PERSON'))) problems.push({ resourceId: id, type: 'MISSING_CONTROL_PERSON', reason: 'no beneficial owner with role CONTROL_PERSON' });
  const held = file.documentTypes(id);
  const lacks = (accepted: readonly DocumentType[], types: ReadonlySet<DocumentType>): boolean => !accepted.some((t) => types.has(t));
  if (lacks(LEGAL_PRESENCE, held)) problems.push({ resourceId: id, type: 'MISSING_LEGAL_PRESENCE_DOCUMENT', acceptedDocumentTypes: LEGAL_PRESENCE, reason: 'a document of legal presence is required' });
  if (lacks(PROOF_OF_ADDRESS, held)) problems.push({ resourceId: id, type: 'MISSING_PROOF_OF_ADDRESS_DOCUMENT', acceptedDocumentTypes: PROOF_OF_ADDRESS, reason: 'a proof of address is required' });
  for (const owner of file.owners) {
    if (lacks(IDENTITY, file.documentTypes(owner.id))) problems.push({ resourceId: owner.id, type: 'MISSING_IDENTITY_DOCUMENT', acceptedDocumentTypes: IDENTITY, reason: 'an identity document of this owner is required' });
  }
  return problems;
}

/** A complete business's outcome: the sandbox's KYB suffix rule (none given: APPROVED); production waits for review. */
function businessOutcome(business: Customer, environment: Environment): BusinessVerificationStatus {
  if (environment !== 'sandbox') return 'PENDING_MANUAL_REVIEW';
  const registrationNumber = business.businessInfo?.registrationNumber;
  const outcome = registrationNumber === undefined ? 'APPROVED' : sandboxCheckOutcome(registrationNumber);
  return outcome === 'PENDING' ? 'PENDING_MANUAL_REVIEW' : outcome;
}

/** A business customer's verification as it stands: RESOLVE_ERRORS while anything is missing, else its outcome. */
export function decideBusinessVerification(business: Customer, environment: Environment, file: BusinessFile, at: number): VerificationEvent[] {
  const problems = missingForBusiness(business, file);
  const verificationStatus = problems.length > 0 ? 'RESOLVE_ERRORS' : businessOutcome(business, environment);
  const verification: Verification = { id: newId('Verification', at), envId: business.envId, customerId: business.id, verificationStatus, problems, createdAt: at, updatedAt: at };
  return [{ type: 'verification.created', verification }];
}

/**
 * A production business's verification waiting for review reads as the kybStatus PATCH
 * /customers/{id} has set since (APPROVED or REJECTED); any other reads as it was made.
 */
export function currentStatus(verification: Verification, customer: Customer | undefined): VerificationStatus {
  if (verification.verificationStatus !== 'PENDING_MANUAL_REVIEW') return verification.verificationStatus;
  const kyb = customer?.kybStatus;
  return kyb === 'APPROVED' || kyb === 'REJECTED' ? kyb : 'PENDING_MANUAL_REVIEW';
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

  readonly #byEnv = new Map<string, SortedIds>();
  readonly #byCustomer = new Map<string, SortedIds>();

  restore(record: Verification): void {
    this.#records.set(record.id, record);
    bucket(this.#byEnv, record.envId).insert(record.id);
    if (record.customerId !== undefined) bucket(this.#byCustomer, record.customerId).insert(record.id);
  }

  /** Ids of the environment's verifications, or of one customer's, oldest first. */
  idsIn(envId: string, customerId?: string): readonly string[] {
    return (customerId === undefined ? this.#byEnv.get(envId) : this.#byCustomer.get(customerId))?.ids ?? [];
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
  /** A business customer's: what is missing; otherwise empty (problems with the input are refused with a 400). */
  errors: VerificationErrorView[];
  createdAt: string;
  updatedAt: string;
}

export interface VerificationErrorView {
  resourceId: string;
  type: MissingKind;
  field?: string;
  acceptedDocumentTypes?: DocumentType[];
  reason: string;
}

function renderProblem(p: VerificationProblem): VerificationErrorView {
  const view: VerificationErrorView = { resourceId: p.resourceId, type: p.type, reason: p.reason };
  if (p.field !== undefined) view.field = p.field;
  if (p.acceptedDocumentTypes !== undefined) view.acceptedDocumentTypes = [...p.acceptedDocumentTypes];
  return view;
}

/** `status`: the verification's status as it reads now (currentStatus). */
export function renderVerification(v: Verification, status: VerificationStatus = v.verificationStatus): VerificationView {
  const view: VerificationView = {
    id: v.id,
    verificationStatus: status,
    errors: (v.problems ?? []).map(renderProblem),
    createdAt: isoTime(v.createdAt),
    updatedAt: isoTime(v.updatedAt),
  };
  if (v.customerId !== undefined) view.customerId = v.customerId;
  if (v.businessInfo !== undefined) view.businessInfo = { ...v.businessInfo };
  if (v.kybStatus !== undefined) view.kybStatus = v.kybStatus;
  if (v.beneficialOwners !== undefined) view.beneficialOwners = v.beneficialOwners.map((o) => ({ personalInfo: { ...o.personalInfo }, kycStatus: o.kycStatus }));
  return view;
}
