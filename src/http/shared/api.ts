import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TOptional, type TUnknown, Type } from 'typebox';

/** The Fastify instance a family's route table registers on, with TypeBox typing for schemas. */
export type Api = Parameters<FastifyPluginAsyncTypebox>[0];

/** What a route's `tags` are: the OpenAPI group, e.g. `e2 domains`. */
export type Tags = string[];

/** The body encodings the SDKs and HTML forms send to write routes. */
export const BodyTypes = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];

/** An optional body of optional fields of any type: the route checks them by hand, with the reference's messages. */
export const UncheckedBody = <const Name extends string>(names: readonly Name[]) =>
  Type.Optional(
    Type.Object(
      Object.fromEntries(names.map((name) => [name, Type.Optional(Type.Unknown())])) as {
        [K in Name]: TOptional<TUnknown>;
      },
    ),
  );

/** A `true`/`false` query flag. */
export const Flag = Type.Union([Type.Literal('true'), Type.Literal('false')]);
