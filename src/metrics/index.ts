export { createMetrics, type DeliveryQueueState, type Metrics, type MetricsDependencies } from './mailroom-metrics.ts';
