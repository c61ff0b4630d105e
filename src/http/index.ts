export { buildHttpServer, type HttpServices } from './server.ts';
