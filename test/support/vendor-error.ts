// An error answer held to the vendor's published schema for its status
// (vendor-contract.ts), except where CONTRACT.md decides otherwise for every route of the
// service: `details` is its list of offending fields (the vendor's is an object), and a 404's
// code is NOT_FOUND for every kind of record (the vendor names the kind, and has no code for
// some, such as sessions). Everything else (status, code, message, and the codes of the other
// statuses) is held to the vendor's schema as it is.
import { assertVendorResponse, vendorDocument, vendorOperation } from './vendor-contract.js';

/** The first code the vendor's schema for `operationId`'s `status` lists: what stands in for CONTRACT.md's NOT_FOUND. */
function vendorNotFoundCode(operationId: string): string {
  const schema = vendorOperation(operationId).operation.responses?.['404']?.content?.['application/json']?.schema as { $ref?: string } | undefined;
  const name = schema?.$ref?.split('/').pop();
  const component = (vendorDocument as unknown as { components: { schemas: Record<string, { properties?: { code?: { enum?: string[] } } }> } }).components.schemas[name ?? ''];
  const code = component?.properties?.code?.enum?.[0];
  if (code === undefined) throw new Error(`vendor-subset.json gives ${operationId} no 404 code`);
  return code;
}

export function assertVendorError(operationId: string, status: number, body: { code: string; details?: unknown }): void {
  const { details: _listOfFields, ...rest } = body;
  const code = status === 404 && body.code === 'NOT_FOUND' ? vendorNotFoundCode(operationId) : body.code;
  assertVendorResponse(operationId, status, { ...rest, code });
}
