// Beneficial owners and documents of business verification (issue 39; the vendor's
// createBeneficialOwner ... deleteDocument; CONTRACT.md "Today's clients, second wave").
// A document's upload is multipart/form-data: the form is parsed and the file's type told
// from its bytes (multipart.ts), the bytes written durably to the document store, and only
// then the command run that names them: a crash in between leaves bytes nothing names,
// never an entry naming missing bytes. A document's bytes are not served back (the vendor's
// contract returns its metadata only); DELETE and PUT free the bytes they no longer name.
import { Type, type Static } from '@sinclair/typebox';
import { ID_TYPES, OWNER_ROLES, renderOwner, type BeneficialOwnerView as OwnerViewType } from '../../../actors/beneficial-owner.js';
import { DOCUMENT_TYPES, renderDocument, type DocumentDetails, type DocumentView as DocumentViewType, type StoredFile } from '../../../actors/document.js';
import { createBeneficialOwner, deleteDocument, replaceDocument, updateBeneficialOwner, uploadDocument } from '../../../actors/commands/business-verification.js';
import { beneficialOwner, beneficialOwnerPage, documentPage, verificationDocument } from '../../../actors/queries/business-verification.js';
import { storeBytes } from '../../engine/blob-store.js';
import { documentFile, FORM_OVERHEAD_BYTES, MAX_FILE_BYTES, parseForm, type MultipartBody } from '../multipart.js';
import { PageQuery } from '../pagination.js';
import { route, type Route, type RouteContext, type RoutePorts } from '../route.js';
import { recordReply } from '../record-reply.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { Email, IdOf, ListOf } from '../schemas/resources.js';
import { Country, DateString, Obj, Str, StringEnum, Text, List, validator, type Parsed, type Validator } from '../validation.js';

const Field = (maxLength = 255) => Text({ minLength: 1, maxLength });
const Address = Obj(
  { line1: Field(), line2: Type.Optional(Field()), city: Type.Optional(Field()), state: Type.Optional(Field()), postalCode: Field(32), country: Country() },
  { $id: 'OwnerAddress' },
);
const personalFields = {
  firstName: Field(),
  lastName: Field(),
  birthDate: DateString(),
  nationality: Country(),
  address: Address,
  idType: StringEnum(ID_TYPES),
  identifier: Field(64),
  middleName: Type.Optional(Field()),
  email: Type.Optional(Email),
  phoneNumber: Type.Optional(Str({ pattern: '^\\+[1-9]\\d{1,14}$' })),
  countryOfIssuance: Type.Optional(Country()),
};
const PersonalInfo = Obj(personalFields, { $id: 'BeneficialOwnerPersonalInfo' });
const PersonalInfoUpdate = Type.Partial(Obj(personalFields), { $id: 'BeneficialOwnerPersonalInfoUpdate' });
const Roles = List(StringEnum(OWNER_ROLES), { minItems: 1, maxItems: OWNER_ROLES.length });
const Percentage = Type.Integer({ minimum: 0, maximum: 100 });
const CreateOwner = Obj({ customerId: IdOf('Customer'), roles: Roles, ownershipPercentage: Percentage, personalInfo: PersonalInfo }, { $id: 'BeneficialOwnerCreateRequest' });
const UpdateOwner = Obj({ roles: Type.Optional(Roles), ownershipPercentage: Type.Optional(Percentage), personalInfo: Type.Optional(PersonalInfoUpdate) }, { $id: 'BeneficialOwnerUpdateRequest' });
const OwnerView = Obj(
  { id: Str(), customerId: Str(), roles: List(StringEnum(OWNER_ROLES)), ownershipPercentage: Type.Integer(), personalInfo: PersonalInfo, kycStatus: StringEnum(['PENDING', 'APPROVED', 'REJECTED'] as const), createdAt: Str({ format: 'date-time' }), updatedAt: Str({ format: 'date-time' }) },
  { $id: 'BeneficialOwner' },
);
const OwnerIdParam = validator(Obj({ beneficialOwnerId: IdOf('BeneficialOwner') }));
const ListOwners = Obj({ customerId: IdOf('Customer'), ...PageQuery });

const Side = StringEnum(['FRONT', 'BACK'] as const);
const detailFields = { documentType: StringEnum(DOCUMENT_TYPES), country: Country(), side: Type.Optional(Side), documentNumber: Type.Optional(Field(64)), issuingAuthority: Type.Optional(Field()) };
const ReplaceFields = validator(Obj(detailFields));
const UploadFields = validator(Obj({ documentHolder: Type.Union([IdOf('Customer'), IdOf('BeneficialOwner')]), ...detailFields }));
const binary = { file: Str({ format: 'binary', description: 'PDF, JPEG or PNG (told by content), at most 10 MiB' }) };
const UploadForm = Obj({ ...binary, ...UploadFields.schema.properties }, { $id: 'DocumentUploadRequest' });
const ReplaceForm = Obj({ ...binary, ...ReplaceFields.schema.properties }, { $id: 'DocumentReplaceRequest' });
const multipart = (schema: typeof UploadForm) => ({ schema, maxBytes: MAX_FILE_BYTES + FORM_OVERHEAD_BYTES });
const DocumentView = Obj(
  {
    id: Str(),
    documentHolder: Str(),
    documentType: StringEnum(DOCUMENT_TYPES),
    side: Type.Optional(Side),
    country: Str(),
    documentNumber: Type.Optional(Str()),
    issuingAuthority: Type.Optional(Str()),
    fileName: Str(),
    createdAt: Str({ format: 'date-time' }),
    updatedAt: Str({ format: 'date-time' }),
  },
  { $id: 'Document' },
);
const DocumentIdParam = validator(Obj({ documentId: IdOf('Document') }));
const ListDocuments = Obj({ documentHolder: Type.Optional(Type.Union([IdOf('Customer'), IdOf('BeneficialOwner')])), ...PageQuery });

/** A form's file written durably to the document store: the fact its command names. */
async function storeFile<F extends Parsed<typeof ReplaceFields>>(ports: RoutePorts, body: MultipartBody, fields: Validator<F>) {
  const form = await parseForm(body);
  const parsed = fields.parse(form.fields);
  const file = await documentFile(form.file);
  const stored: StoredFile = { ...(await storeBytes(ports.documentBytes, file.bytes)), mediaType: file.mediaType };
  const details: DocumentDetails = { documentType: parsed.documentType, country: parsed.country, fileName: file.fileName };
  const optional = { side: parsed.side, documentNumber: parsed.documentNumber, issuingAuthority: parsed.issuingAuthority };
  for (const [name, value] of Object.entries(optional)) if (value !== undefined) Object.assign(details, { [name]: value });
  return { parsed, details, stored };
}

async function upload(ctx: RouteContext<MultipartBody, undefined>) {
  const { parsed, details, stored } = await storeFile(ctx.ports, ctx.body, UploadFields);
  const holderId = parsed.documentHolder;
  return ctx.run(uploadDocument, { envId: ctx.env.id, holderId, details, file: stored }, (d) => recordReply(201, 'Document', d));
}

async function replace(ctx: RouteContext<MultipartBody, undefined, Parsed<typeof DocumentIdParam>>) {
  const { details, stored } = await storeFile(ctx.ports, ctx.body, ReplaceFields);
  const unnamed: StoredFile[] = [];
  const reply = await ctx.run(replaceDocument, { envId: ctx.env.id, documentId: ctx.params.documentId, details, file: stored }, ({ document, replaced }) => {
    unnamed.push(replaced);
    return { status: 200, body: renderDocument(document) };
  });
  await free(ctx.ports, unnamed);
  return reply;
}

async function remove(ctx: RouteContext<undefined, undefined, Parsed<typeof DocumentIdParam>>) {
  const unnamed: StoredFile[] = [];
  const reply = await ctx.run(deleteDocument, { envId: ctx.env.id, documentId: ctx.params.documentId }, (file) => {
    unnamed.push(file);
    return { status: 204, body: undefined };
  });
  await free(ctx.ports, unnamed);
  return reply;
}

/** Frees bytes no entry names any more, once the entry that stopped naming them is durable (ctx.run resolved). */
async function free(ports: RoutePorts, files: readonly StoredFile[]): Promise<void> {
  for (const file of files) await ports.documentBytes.remove(file.key);
}

export const businessVerificationRoutes: Route[] = [
  route<Static<typeof CreateOwner>>({
    method: 'POST',
    path: '/beneficial-owners',
    permission: 'MANAGE',
    operationId: 'createBeneficialOwner',
    summary: "Add a beneficial owner, director or officer to a business customer (KYC by the sandbox's last-name suffix rule)",
    tag: 'Verifications',
    body: validator(CreateOwner),
    response: OwnerView,
    status: 201,
    idempotent: true,
    handle: (ctx) => {
      const { customerId, ...owner } = ctx.body;
      return ctx.run(createBeneficialOwner, { envId: ctx.env.id, environment: ctx.env.environment, customerId, owner }, (o) => recordReply(201, 'BeneficialOwner', o));
    },
  }),
  route<undefined, Static<typeof ListOwners>>({
    method: 'GET',
    path: '/beneficial-owners',
    permission: 'VIEW',
    operationId: 'listBeneficialOwners',
    summary: "List a business customer's beneficial owners",
    tag: 'Verifications',
    query: validator(ListOwners, { coerce: true }),
    response: ListOf(OwnerView),
    status: 200,
    handle: async ({ read, env, query: { customerId, ...page } }) => {
      const found = await read(beneficialOwnerPage, { envId: env.id, customerId, page });
      return { status: 200, body: { ...found, data: found.data.map(renderOwner) } };
    },
  }),
  route<undefined, undefined, Parsed<typeof OwnerIdParam>>({
    method: 'GET',
    path: '/beneficial-owners/{beneficialOwnerId}',
    permission: 'VIEW',
    operationId: 'getBeneficialOwner',
    summary: 'Read a beneficial owner',
    tag: 'Verifications',
    params: OwnerIdParam,
    response: OwnerView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderOwner(await read(beneficialOwner, { envId: env.id, ownerId: params.beneficialOwnerId })) }),
  }),
  route<Static<typeof UpdateOwner>, undefined, Parsed<typeof OwnerIdParam>>({
    method: 'PATCH',
    path: '/beneficial-owners/{beneficialOwnerId}',
    permission: 'MANAGE',
    operationId: 'updateBeneficialOwner',
    summary: 'Change a beneficial owner: only the fields given (a new last name is checked again)',
    tag: 'Verifications',
    params: OwnerIdParam,
    body: validator(UpdateOwner),
    response: OwnerView,
    status: 200,
    handle: (ctx) => ctx.run(updateBeneficialOwner, { envId: ctx.env.id, environment: ctx.env.environment, ownerId: ctx.params.beneficialOwnerId, patch: ctx.body }, (o) => ({ status: 200, body: renderOwner(o) })),
  }),
  route<MultipartBody>({
    method: 'POST',
    path: '/documents',
    permission: 'MANAGE',
    operationId: 'uploadDocument',
    summary: "Upload a customer's or beneficial owner's document (multipart/form-data: `file` and the fields)",
    tag: 'Verifications',
    multipart: multipart(UploadForm),
    response: DocumentView,
    status: 201,
    idempotent: true,
    handle: upload,
  }),
  route<undefined, Static<typeof ListDocuments>>({
    method: 'GET',
    path: '/documents',
    permission: 'VIEW',
    operationId: 'listDocuments',
    summary: "List the environment's documents, or one holder's",
    tag: 'Verifications',
    query: validator(ListDocuments, { coerce: true }),
    response: ListOf(DocumentView),
    status: 200,
    handle: async ({ read, env, query: { documentHolder, ...page } }) => {
      const found = await read(documentPage, { envId: env.id, ...(documentHolder === undefined ? {} : { holderId: documentHolder }), page });
      return { status: 200, body: { ...found, data: found.data.map(renderDocument) } };
    },
  }),
  route<undefined, undefined, Parsed<typeof DocumentIdParam>>({
    method: 'GET',
    path: '/documents/{documentId}',
    permission: 'VIEW',
    operationId: 'getDocument',
    summary: "Read a document's details (its bytes are not served back)",
    tag: 'Verifications',
    params: DocumentIdParam,
    response: DocumentView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderDocument(await read(verificationDocument, { envId: env.id, documentId: params.documentId })) }),
  }),
  route<MultipartBody, undefined, Parsed<typeof DocumentIdParam>>({
    method: 'PUT',
    path: '/documents/{documentId}',
    permission: 'MANAGE',
    operationId: 'replaceDocument',
    summary: "Replace a document's file and details (multipart/form-data)",
    tag: 'Verifications',
    params: DocumentIdParam,
    multipart: multipart(ReplaceForm),
    response: DocumentView,
    status: 200,
    handle: replace,
  }),
  route<undefined, undefined, Parsed<typeof DocumentIdParam>>({
    method: 'DELETE',
    path: '/documents/{documentId}',
    permission: 'MANAGE',
    operationId: 'deleteDocument',
    summary: 'Delete a document and free its bytes',
    tag: 'Verifications',
    params: DocumentIdParam,
    status: 204,
    handle: remove,
  }),
];

/** Fail to compile when a published view and the domain's drift apart. */
export type BusinessVerificationViewChecks = [Holds<Same<Static<typeof OwnerView>, OwnerViewType>>, Holds<Same<Static<typeof DocumentView>, DocumentViewType>>];
