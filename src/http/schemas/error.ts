// The error body every failure answers (CONTRACT.md "HTTP surface"), as published: the
// OpenAPI document's `Error` component, the default response of every operation.
import { Type, type Static } from '@sinclair/typebox';
import { ERROR_CODES, type ErrorBody } from '../errors.js';
import type { Holds, Same } from './same-shape.js';
import { Obj, StringEnum } from '../validation.js';

export const ErrorCodeSchema = StringEnum(ERROR_CODES, { $id: 'ErrorCode', description: "what went wrong; each code has one status (src/http/errors.ts)" });

// Plain strings without Str's length cap: messages and details are the service's own words
// and may quote what they refuse.
export const ErrorSchema = Obj(
  {
    status: Type.Integer({ description: 'the HTTP status of the response' }),
    code: ErrorCodeSchema,
    message: Type.String(),
    requestId: Type.String({ description: "the response's X-Request-Id: the id of this request in the service's logs" }),
    reason: Type.Optional(Type.String({ description: 'on 401: the check that failed, in the words of SERVICE_SPEC part 5.8 and the README (Embedded wallets)' })),
    details: Type.Optional(
      Type.Array(
        Type.Object(
          { field: Type.String({ description: 'a dotted path into the request: address.country, query.limit, a header name' }), message: Type.String() },
          // Some codes add facts about the field (INSUFFICIENT_BALANCE: balance, required).
          { additionalProperties: Type.Unknown() },
        ),
        { description: 'the offending fields' },
      ),
    ),
  },
  { $id: 'Error' },
);

/**
 * Fails to compile when the published Error and the body errorBody() renders drift apart.
 * The requestId is being added to every error body with the X-Request-Id header; until
 * ErrorBody carries it the intersection supplies it, and once it does the intersection
 * changes nothing.
 */
export type ErrorSchemaCheck = Holds<Same<Static<typeof ErrorSchema>, ErrorBody & { requestId: string }>>;
