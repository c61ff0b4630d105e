import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifyRequest } from 'fastify';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { compiledOnFirstCall } from './compile-on-first-use.ts';

type BuildCompiler = ReturnType<typeof AjvCompiler>;
interface Validate {
  (data: unknown): boolean;
  errors?: unknown;
}
/** What a pool's compiler is really called with, whatever its typings say: the whole route definition. */
type RouteCompiler = (route: FastifyRouteSchemaDef<unknown>) => Validate;

const compilers = AjvCompiler();

/** Bodies parsed from a urlencoded or multipart form, whose fields are all text. */
const formBodies = new WeakSet<object>();

/** A `preValidation` hook noting form bodies, which are coerced to their schemas' types (see bodiesUncoerced). */
export async function noteFormBody(request: FastifyRequest) {
  const type = request.headers['content-type']?.toLowerCase() ?? '';
  const form = type.startsWith('application/x-www-form-urlencoded') || type.startsWith('multipart/form-data');
  if (form && typeof request.body === 'object' && request.body !== null) formBodies.add(request.body);
}

/**
 * Fastify's validators, except for bodies. A JSON body keeps its types: query strings, path parameters, headers and
 * form fields are text, and are coerced to their schemas' types; JSON is not: Ajv's coercion would read `null` as
 * `false` for `legalHold` or `isActive` and `true` as 1 for `retentionDays`, changes nobody asked for. And a body whose
 * schema allows no other properties is refused for one it does not know, rather than having it removed: a misspelt
 * filter of an erase or a rule's condition would otherwise be dropped, and widen what the request takes.
 *
 * Each validator compiles on its first call (see compile-on-first-use.ts), and a JSON-only route never compiles its
 * form variant; the fuzz test reaches every route's validators.
 */
export const bodiesUncoerced: BuildCompiler = (externalSchemas, options) => {
  const compiler = (customOptions: object) =>
    compilers(externalSchemas, {
      ...options,
      customOptions: { ...options?.customOptions, ...customOptions },
    } as typeof options) as unknown as RouteCompiler;
  const coercing = compilers(externalSchemas, options) as unknown as RouteCompiler;
  const form = compiler({ removeAdditional: false });
  const exact = compiler({ removeAdditional: false, coerceTypes: false });
  const compile: RouteCompiler = (route) => {
    if (route.httpPart !== 'body') return validatorOf(compiledOnFirstCall(() => coercing(route)));
    const fromForm = compiledOnFirstCall(() => form(route));
    const fromJson = compiledOnFirstCall(() => exact(route));
    return validatorOf((data) =>
      typeof data === 'object' && data !== null && formBodies.has(data) ? fromForm() : fromJson(),
    );
  };
  return compile as unknown as ReturnType<BuildCompiler>;
};

/** Validates with the function `choose` gives, and keeps its errors where Fastify reads them: on the validator. */
function validatorOf(choose: (data: unknown) => Validate): Validate {
  const validate: Validate = (data) => {
    const chosen = choose(data);
    const valid = chosen(data);
    validate.errors = chosen.errors;
    return valid;
  };
  return validate;
}
