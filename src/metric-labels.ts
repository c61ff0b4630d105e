import { ATTEMPT_OUTCOMES } from './delivery/index.ts';
import { ENDPOINT_TYPES } from './endpoints/index.ts';
import type { MetricsDependencies } from './metrics/index.ts';
import { SMTP_REFUSAL_REASONS } from './smtp/index.ts';

/** Every value the metrics' labels take, as the capabilities that report them list them (see createMetrics). */
export const METRIC_LABEL_VALUES: MetricsDependencies['labelValues'] = {
  refusalReasons: SMTP_REFUSAL_REASONS,
  endpointTypes: ENDPOINT_TYPES,
  attemptOutcomes: ATTEMPT_OUTCOMES,
};
