// `npm start`. The process settings come first: the server's modules are loaded only once they hold.
import { relaunchWithProcessSettings } from './process-settings.ts';

relaunchWithProcessSettings();
const { serve } = await import('./server.ts');
await serve();
