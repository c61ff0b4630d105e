import { Type } from 'typebox';
import type { ApiKey, IssuedKey } from '../../../accounts/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';

const apiKeyFields = {
  id: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to tell keys apart without revealing them' }),
  createdAt: DateTime,
  lastUsedAt: Nullable(DateTime),
  revokedAt: Nullable(DateTime),
};

export const ApiKeySchema = Type.Object(apiKeyFields);

export const IssuedKeySchema = Type.Object({
  ...apiKeyFields,
  key: Type.String({ description: 'The API key itself: shown in this answer only, never again' }),
});

export function presentApiKey(key: ApiKey) {
  return {
    id: key.id,
    prefix: key.prefix,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
  };
}

export function presentIssuedKey(issued: IssuedKey) {
  return { ...presentApiKey(issued), key: issued.key };
}
