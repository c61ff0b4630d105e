export type { ApiRateLimit } from './auth.ts';
export { buildMetricsServer, type MetricsExposure, type MetricsSource } from './metrics-route.ts';
export { buildHttpServer, type HttpServices } from './server.ts';
