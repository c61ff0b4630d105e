export { consoleRoutes } from './console-routes.ts';
