// Named schemas: a typebox schema built with an `$id` is a component of the OpenAPI
// document, published once under components/schemas/<$id> and referred to from every use
// (openapi.ts does the moving). This is where such a component lives in the document.
import type { TSchema } from '@sinclair/typebox';

/** The `$ref` of the component called `name`. */
export function componentRefTo(name: string): string {
  return `#/components/schemas/${name}`;
}

/** The `$ref` of a named schema's component. */
export function componentRef(schema: TSchema): string {
  if (schema.$id === undefined) throw new Error('only a named schema (one with an $id) is a component');
  return componentRefTo(schema.$id);
}
