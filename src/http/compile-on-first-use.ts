import type AjvCompiler from '@fastify/ajv-compiler';
import type SerializerSelector from '@fastify/fast-json-stringify-compiler';

/*
 * Fastify compiles every route's validators and response serializers as it starts: more than half of a server's
 * start-up, for about a hundred routes of which a process may serve a few. These builders hand Fastify functions that
 * compile on their first call and keep what they compiled; the fuzz test reaches every route's validators.
 */

type BuildValidator = ReturnType<typeof AjvCompiler>;
type BuildSerializer = ReturnType<typeof SerializerSelector>;
interface Validate {
  (data: unknown): unknown;
  errors?: unknown;
}
type RouteCompiler<Compiled> = (route: object) => Compiled;

export function validatorsOnFirstUse(build: BuildValidator): BuildValidator {
  return ((externalSchemas, options) => {
    const compile = build(externalSchemas, options) as unknown as RouteCompiler<Validate>;
    return (route: object) => {
      let compiled: Validate | undefined;
      // Fastify reads a failed validation's errors from the function it was given.
      const validate: Validate = (data) => {
        compiled ??= compile(route);
        const result = compiled(data);
        validate.errors = compiled.errors;
        return result;
      };
      return validate;
    };
  }) as BuildValidator;
}

export function serializersOnFirstUse(build: BuildSerializer): BuildSerializer {
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    return (route) => {
      let compiled: ((document: unknown) => string) | undefined;
      return (document) => {
        compiled ??= compile(route);
        return compiled(document);
      };
    };
  };
}
