import type SerializerSelector from '@fastify/fast-json-stringify-compiler';

/*
 * Fastify compiles every route's validators and response serializers as it starts: more than half of a server's
 * start-up, for about a hundred routes of which a process may serve a few. This builder hands Fastify serializers that
 * compile on their first call and keep what they compiled; validators do the same (body-validation.ts).
 */

type BuildSerializer = ReturnType<typeof SerializerSelector>;

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
