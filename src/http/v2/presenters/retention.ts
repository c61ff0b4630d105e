import { type Static, Type } from 'typebox';
import type { AccountRetention, EraseResult, Erasure, ScopedRetention } from '../../../retention/index.ts';
import { Nullable } from '../../schemas.ts';

const RetentionDays = Nullable(Type.Integer({ description: 'Days mail is kept; null: no period of its own' }));

export const AccountRetentionSchema = Type.Object({ retentionDays: RetentionDays });

export const ScopedRetentionSchema = Type.Object({
  id: Type.String(),
  retentionDays: RetentionDays,
  legalHold: Type.Boolean(),
});

export const ErasureSchema = Type.Object({
  id: Type.String(),
  apiKeyId: Type.String(),
  filter: Type.Record(Type.String(), Type.Unknown()),
  erasedCount: Type.Integer(),
  erasedAt: Type.String({ format: 'date-time' }),
});

export const EraseResultSchema = Type.Object({
  dryRun: Type.Boolean(),
  count: Type.Integer(),
  erasure: Type.Optional(ErasureSchema),
});

export const presentAccountRetention = ({
  retentionDays,
}: AccountRetention): Static<typeof AccountRetentionSchema> => ({
  retentionDays,
});

export const presentScopedRetention = ({
  id,
  retentionDays,
  legalHold,
}: ScopedRetention): Static<typeof ScopedRetentionSchema> => ({ id, retentionDays, legalHold });

export const presentErasure = (erasure: Erasure): Static<typeof ErasureSchema> => ({
  id: erasure.id,
  apiKeyId: erasure.apiKeyId,
  filter: erasure.filter,
  erasedCount: erasure.erasedCount,
  erasedAt: erasure.erasedAt,
});

export const presentEraseResult = (result: EraseResult): Static<typeof EraseResultSchema> =>
  result.dryRun
    ? { dryRun: true, count: result.count }
    : { dryRun: false, count: result.count, erasure: presentErasure(result.erasure) };
