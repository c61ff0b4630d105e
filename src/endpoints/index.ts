export { type EndpointSummary, findEndpointSummary } from './endpoint-directory.ts';
