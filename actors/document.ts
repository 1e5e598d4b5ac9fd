// Verification documents (issue 39; vendor uploadDocument and its neighbours): a passport,
// a certificate of incorporation, a utility bill, held by a customer or one of a business's
// beneficial owners. The log names a document's bytes (where they are kept, their SHA-256,
// size and type) and never holds them: the route writes them to the document store first
// and decides with them as a verified fact (src/http/routes/documents.ts), so an entry can
// only name bytes already durable.
//
// A document is held by the actor of the customer it concerns (its holder, or the business
// its owner belongs to): a business's verification reads them all.
import { newId } from '../src/engine/ids.js';
import { RecordMap, bucket, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export const DOCUMENT_TYPES = [
  'PASSPORT',
  'DRIVERS_LICENSE',
  'NATIONAL_ID',
  'PROOF_OF_ADDRESS',
  'BANK_STATEMENT',
  'TAX_RETURN',
  'CERTIFICATE_OF_INCORPORATION',
  'ARTICLES_OF_INCORPORATION',
  'ARTICLES_OF_ASSOCIATION',
  'STATE_REGISTRY_EXCERPT',
  'GOOD_STANDING_CERTIFICATE',
  'INFORMATION_STATEMENT',
  'INCUMBENCY_CERTIFICATE',
  'BUSINESS_LICENSE',
  'SHAREHOLDER_REGISTER',
  'POWER_OF_ATTORNEY',
  'UTILITY_BILL',
  'ELECTRICITY_BILL',
  'RENT_OR_LEASE_AGREEMENT',
  'DIRECTOR_REGISTRY',
  'TRUST_AGREEMENT',
  'STATE_COMPANY_REGISTRY',
  'PARTNERSHIP_CONTROL_AGREEMENT',
  'PARTNERSHIP_AGREEMENT',
  'SELFIE',
  'OTHER',
] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];
export type DocumentSide = 'FRONT' | 'BACK';
/** What a file is by its content: the only kinds a document may be. */
export type DocumentMediaType = 'application/pdf' | 'image/jpeg' | 'image/png';

/** A document's bytes as the log names them. */
export interface StoredFile {
  /** Where the document store keeps them. */
  readonly key: string;
  /** SHA-256, hex */
  readonly sha256: string;
  readonly size: number;
  readonly mediaType: DocumentMediaType;
}

/** What describes a document besides its holder and bytes. */
export interface DocumentDetails {
  readonly documentType: DocumentType;
  /** ISO 3166-1 alpha-2 */
  readonly country: string;
  readonly side?: DocumentSide;
  readonly documentNumber?: string;
  readonly issuingAuthority?: string;
  /** As the client named the file (never used to tell its type). */
  readonly fileName: string;
}

export interface VerificationDocument extends DocumentDetails {
  /** `Document:<uuid>` */
  readonly id: string;
  readonly envId: string;
  /** A Customer or BeneficialOwner id. */
  readonly holderId: string;
  /** The customer whose actor holds it: the holder, or the business its owner belongs to. */
  readonly customerId: string;
  readonly file: StoredFile;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type DocumentEvent =
  | { type: 'document.created'; document: VerificationDocument }
  | { type: 'document.replaced'; document: VerificationDocument }
  | { type: 'document.deleted'; id: string };

export interface DocumentHolder {
  id: string;
  envId: string;
  customerId: string;
}

export function decideUploadDocument(holder: DocumentHolder, details: DocumentDetails, file: StoredFile, at: number): DocumentEvent[] {
  const document: VerificationDocument = { id: newId('Document', at), envId: holder.envId, holderId: holder.id, customerId: holder.customerId, ...details, file, createdAt: at, updatedAt: at };
  return [{ type: 'document.created', document }];
}

/** New bytes and details in place of the old; the holder stays. */
export function decideReplaceDocument(document: VerificationDocument, details: DocumentDetails, file: StoredFile, at: number): DocumentEvent[] {
  const replaced: VerificationDocument = { id: document.id, envId: document.envId, holderId: document.holderId, customerId: document.customerId, ...details, file, createdAt: document.createdAt, updatedAt: at };
  return [{ type: 'document.replaced', document: replaced }];
}

export class Documents implements RecordKind<VerificationDocument, DocumentEvent> {
  readonly idPrefix = 'Document:';
  readonly #records = new RecordMap<VerificationDocument>();
  readonly records: ReadonlyMap<string, VerificationDocument> = this.#records;
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #byHolder = new Map<string, SortedIds>();

  actorOf(document: VerificationDocument): string {
    return document.customerId;
  }

  readonly appliers: Appliers<DocumentEvent> = {
    'document.created': (event) => {
      if (this.#records.has(event.document.id)) throw new Error(`document ${event.document.id} exists already`);
      this.restore(event.document);
    },
    'document.replaced': (event) => {
      if (!this.#records.has(event.document.id)) throw new Error(`document ${event.document.id} does not exist`);
      this.#records.set(event.document.id, event.document);
    },
    'document.deleted': (event) => {
      const document = this.#records.get(event.id);
      if (document === undefined) throw new Error(`document ${event.id} does not exist`);
      this.#records.delete(event.id);
      this.#byEnv.get(document.envId)?.remove(document.id);
      this.#byHolder.get(document.holderId)?.remove(document.id);
    },
  };

  restore(document: VerificationDocument): void {
    this.#records.set(document.id, document);
    bucket(this.#byEnv, document.envId).insert(document.id);
    bucket(this.#byHolder, document.holderId).insert(document.id);
  }

  checkInvariants(): string[] {
    return [];
  }

  get(id: string): VerificationDocument | undefined {
    return this.#records.get(id);
  }

  inEnv(envId: string, id: string): VerificationDocument | undefined {
    const document = this.#records.get(id);
    return document?.envId === envId ? document : undefined;
  }

  /** Ids of the environment's documents, or of one holder's, oldest first. */
  idsIn(envId: string, holderId?: string): readonly string[] {
    return (holderId === undefined ? this.#byEnv.get(envId) : this.#byHolder.get(holderId))?.ids ?? [];
  }

  /** The document types `holderId` has on file. */
  typesHeldBy(holderId: string): Set<DocumentType> {
    return new Set(this.idsIn('', holderId).map((id) => this.#records.get(id)!.documentType));
  }
}

export interface DocumentView {
  id: string;
  documentHolder: string;
  documentType: DocumentType;
  side?: DocumentSide;
  country: string;
  documentNumber?: string;
  issuingAuthority?: string;
  fileName: string;
  createdAt: string;
  updatedAt: string;
}

export function renderDocument(d: VerificationDocument): DocumentView {
  const view: DocumentView = { id: d.id, documentHolder: d.holderId, documentType: d.documentType, country: d.country, fileName: d.fileName, createdAt: isoTime(d.createdAt), updatedAt: isoTime(d.updatedAt) };
  if (d.side !== undefined) view.side = d.side;
  if (d.documentNumber !== undefined) view.documentNumber = d.documentNumber;
  if (d.issuingAuthority !== undefined) view.issuingAuthority = d.issuingAuthority;
  return view;
}
