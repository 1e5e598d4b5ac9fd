// Verifications (CONTRACT.md; SERVICE_SPEC parts 3 and 4): KYB of a business with its
// beneficial owners, or a customer's standing. Outcomes are decided at creation
// (actors/verification.ts) and read back by id or listed. A business customer named alone
// is verified from its owners and documents on file and answered 200 as the vendor's
// createVerification is (its errors say what is missing); the forms today's clients send
// inline keep their 201.
import { Type, type Static } from '@sinclair/typebox';
import { CHECK_STATUSES, renderVerification, VERIFICATION_STATUSES, type Verification, type VerificationView as VerificationViewType } from '../../../actors/verification.js';
import { DOCUMENT_TYPES } from '../../../actors/document.js';
import { createVerification } from '../../../actors/commands/verifications.js';
import { verificationNow, verificationPage } from '../../../actors/queries/business-verification.js';
import { PageQuery } from '../pagination.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { route, type Reply, type Route } from '../route.js';
import { recordReply } from '../record-reply.js';
import { IdOf, ListOf } from '../schemas/resources.js';
import { Country, DateString, List, Obj, Str, StringEnum, Text, validator } from '../validation.js';

const Field = (options: { maxLength?: number; description?: string } = {}) => Text({ minLength: 1, maxLength: options.maxLength ?? 255, ...(options.description !== undefined ? { description: options.description } : {}) });

const BusinessInfo = Obj(
  {
    registrationNumber: Field({ maxLength: 64, description: 'sandbox: the last 3 characters decide kybStatus (001 PENDING, 002 REJECTED)' }),
    legalName: Type.Optional(Field()),
    doingBusinessAs: Type.Optional(Field()),
    country: Type.Optional(Country()),
    taxId: Type.Optional(Field({ maxLength: 64 })),
    incorporatedOn: Type.Optional(DateString()),
  },
  { $id: 'VerificationBusinessInfo' },
);
const PersonalInfo = Obj(
  {
    firstName: Field(),
    lastName: Field({ description: 'sandbox: the last 3 characters decide kycStatus (001 PENDING, 002 REJECTED)' }),
    middleName: Type.Optional(Field()),
    birthDate: Type.Optional(DateString()),
    nationality: Type.Optional(Country()),
    email: Type.Optional(Field()),
  },
  { $id: 'PersonalInfo' },
);
const CreateVerification = Obj(
  {
    customerId: Type.Optional(IdOf('Customer')),
    businessInfo: Type.Optional(BusinessInfo),
    beneficialOwners: Type.Optional(List(Obj({ personalInfo: PersonalInfo }), { maxItems: 25 })),
  },
  { $id: 'CreateVerificationRequest' },
);
const CheckStatus = StringEnum(CHECK_STATUSES);
const MISSING_KINDS = ['MISSING_FIELD', 'MISSING_BENEFICIAL_OWNER', 'MISSING_CONTROL_PERSON', 'MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_PROOF_OF_ADDRESS_DOCUMENT', 'MISSING_IDENTITY_DOCUMENT'] as const;
const VerificationError = Obj(
  { resourceId: Str(), type: StringEnum(MISSING_KINDS), field: Type.Optional(Str()), acceptedDocumentTypes: Type.Optional(List(StringEnum(DOCUMENT_TYPES))), reason: Str() },
  { $id: 'VerificationError' },
);
export const VerificationView = Obj(
  {
    id: Str(),
    customerId: Type.Optional(Str()),
    verificationStatus: StringEnum(VERIFICATION_STATUSES),
    businessInfo: Type.Optional(BusinessInfo),
    kybStatus: Type.Optional(CheckStatus),
    beneficialOwners: Type.Optional(List(Obj({ personalInfo: PersonalInfo, kycStatus: CheckStatus }), { maxItems: 25 })),
    errors: List(VerificationError, { description: "a business customer's: what is missing before it can be checked; otherwise empty (bad input is refused with a 400)" }),
    createdAt: Str({ format: 'date-time' }),
    updatedAt: Str({ format: 'date-time' }),
  },
  { $id: 'Verification' },
);
const VerificationIdParam = validator(Obj({ id: IdOf('Verification') }));

const ListVerifications = Obj({ customerId: Type.Optional(IdOf('Customer')), verificationStatus: Type.Optional(StringEnum(VERIFICATION_STATUSES)), ...PageQuery });

/** A business verified from its file answers 200 (the vendor's status); the inline forms 201, as they always did. */
const createdVerification = (verification: Verification): Reply => recordReply(verification.problems === undefined ? 201 : 200, 'Verification', verification);

export const verificationRoutes: Route[] = [
  route<Static<typeof CreateVerification>>({
    method: 'POST',
    path: '/verifications',
    operationId: 'createVerification',
    summary: 'Verify a business (KYB) and its beneficial owners (KYC), or a customer',
    tag: 'Verifications',
    permission: 'MANAGE',
    body: validator(CreateVerification),
    response: VerificationView,
    status: 201,
    alsoAnswers: [{ status: 200, response: VerificationView, description: 'a BUSINESS customer named alone: verified from its owners and documents on file; errors list what is missing' }],
    idempotent: true,
    handle: (ctx) => ctx.run(createVerification, { envId: ctx.env.id, environment: ctx.env.environment, verification: ctx.body }, createdVerification),
  }),
  route({
    method: 'GET',
    path: '/verifications/{id}',
    operationId: 'getVerification',
    summary: 'Read a verification',
    tag: 'Verifications',
    permission: 'VIEW',
    params: VerificationIdParam,
    response: VerificationView,
    status: 200,
    handle: async ({ read, env, params }) => {
      const { verification, status } = await read(verificationNow, { envId: env.id, verificationId: params.id });
      return { status: 200, body: renderVerification(verification, status) };
    },
  }),
  route<undefined, Static<typeof ListVerifications>>({
    method: 'GET',
    path: '/verifications',
    permission: 'VIEW',
    operationId: 'listVerifications',
    summary: "List the environment's verifications, newest first, by customer and status as they read now",
    tag: 'Verifications',
    query: validator(ListVerifications, { coerce: true }),
    response: ListOf(VerificationView),
    status: 200,
    handle: async ({ read, env, query: { customerId, verificationStatus, ...page } }) => {
      const found = await read(verificationPage, { envId: env.id, ...(customerId === undefined ? {} : { customerId }), ...(verificationStatus === undefined ? {} : { status: verificationStatus }), page });
      return { status: 200, body: { ...found, data: found.data.map((v) => renderVerification(v.verification, v.status)) } };
    },
  }),
];

/** Fails to compile when the published view and the domain's drift apart. */
export type VerificationViewCheck = Holds<Same<Static<typeof VerificationView>, VerificationViewType>>;
