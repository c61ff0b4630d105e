import { Type } from 'typebox';

export const ErrorBody = Type.Object(
  { error: Type.String() },
  {
    additionalProperties: true,
    description: 'Every error answer: a sentence in `error`, sometimes with extra members',
  },
);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) });

export const Pagination = Type.Object({
  limit: Type.Integer(),
  offset: Type.Integer(),
  total: Type.Integer(),
  hasMore: Type.Boolean(),
});

export const PaginationQuery = {
  limit: Type.Optional(Type.Integer({ description: '1 to 100 (an integer in string form is accepted)' })),
  offset: Type.Optional(Type.Integer({ description: `at least 0, at most ${Number.MAX_SAFE_INTEGER}` })),
};

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/**
 * A request field that is a string or null. Written as one multi-type schema because Ajv's type coercion (needed for
 * query strings and form bodies) would turn null into "" while trying the string branch of a union.
 */
export const NullableString = (options: { description?: string } = {}) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], ...options });

export const DateTime = Type.String({ format: 'date-time' });

/** The common error answers, so every route documents them. */
export const errorResponses = {
  400: ErrorBody,
  401: ErrorBody,
  404: ErrorBody,
};
