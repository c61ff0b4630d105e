import type SerializerSelector from '@fastify/fast-json-stringify-compiler';

/*
 * Fastify compiles every route's validators and response serializers as it starts: more than half of a server's
 * start-up, for about a hundred routes of which a process may serve a few. Serializers here, and validators in
 * body-validation.ts, are handed to Fastify as functions that compile on their first call and keep what they compiled.
 */

type BuildSerializer = ReturnType<typeof SerializerSelector>;

/** What `compile` returns, compiled on the first call and kept. */
export function compiledOnFirstCall<Compiled>(compile: () => Compiled): () => Compiled {
  let compiled: Compiled | undefined;
  return () => {
    compiled ??= compile();
    return compiled;
  };
}

export function serializersOnFirstUse(build: BuildSerializer): BuildSerializer {
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    return (route) => {
      const serializer = compiledOnFirstCall(() => compile(route));
      return (document) => serializer()(document);
    };
  };
}
