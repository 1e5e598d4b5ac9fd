// Verifications (CONTRACT.md; SERVICE_SPEC parts 3 and 4): KYB of a business with its
// beneficial owners, or a customer's standing. Outcomes are decided at creation
// (actors/verification.ts) and read back by id.
import { Type, type Static } from '@sinclair/typebox';
import { CHECK_STATUSES, renderVerification, VERIFICATION_STATUSES, type Verification, type VerificationView as VerificationViewType } from '../../../actors/verification.js';
import { createVerification } from '../../../actors/commands/verifications.js';
import { verification } from '../../../actors/queries/records.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { route, type Reply, type Route } from '../route.js';
import { recordReply } from '../record-reply.js';
import { IdOf } from '../schemas/resources.js';
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
const VerificationView = Obj(
  {
    id: Str(),
    customerId: Type.Optional(Str()),
    verificationStatus: StringEnum(VERIFICATION_STATUSES),
    businessInfo: Type.Optional(BusinessInfo),
    kybStatus: Type.Optional(CheckStatus),
    beneficialOwners: Type.Optional(List(Obj({ personalInfo: PersonalInfo, kycStatus: CheckStatus }), { maxItems: 25 })),
    errors: List(Obj({ field: Str(), message: Str() }), { maxItems: 0, description: 'always empty: problems with the input are refused with a 400' }),
    createdAt: Str({ format: 'date-time' }),
    updatedAt: Str({ format: 'date-time' }),
  },
  { $id: 'Verification' },
);
const VerificationIdParam = validator(Obj({ id: IdOf('Verification') }));

const createdVerification = (verification: Verification): Reply => recordReply(201, 'Verification', verification);

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
    handle: async ({ read, env, params }) => ({ status: 200, body: renderVerification(await read(verification, { envId: env.id, verificationId: params.id })) }),
  }),
];

/** Fails to compile when the published view and the domain's drift apart. */
export type VerificationViewCheck = Holds<Same<Static<typeof VerificationView>, VerificationViewType>>;
