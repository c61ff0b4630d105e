import { apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { type ServerProcess, startServerProcess } from '../helpers/process.ts';

export interface MailroomProcess extends ServerProcess {
  smtpPort: number;
  api: ReturnType<typeof apiClient>;
}

/**
 * Starts `src/main.ts` with `env` on fixed HTTP and SMTP ports and an API client bound to it. Ports `env` does not
 * fix are picked free; another test may take one between the pick and the child's listen, so when the child says a
 * port is in use they are picked again.
 */
export async function startMailroom(env: Record<string, string>, apiKey: string): Promise<MailroomProcess> {
  const portsPicked = !(Number(env.PORT) && Number(env.SMTP_PORT));
  for (let attempt = 1; ; attempt++) {
    const [httpPort, smtpPort] = [Number(env.PORT) || (await freePort()), Number(env.SMTP_PORT) || (await freePort())];
    try {
      const process = await startServerProcess({ ...env, PORT: String(httpPort), SMTP_PORT: String(smtpPort) });
      return { ...process, smtpPort, api: apiClient(process.httpUrl, apiKey) };
    } catch (error) {
      if (!portsPicked || attempt === 3 || !/PORT \d+ is in use: /.test(String(error))) throw error;
    }
  }
}
