import { createServer, type Socket } from 'node:net';

/** SpamAssassin's test string: a message that contains it is spam, whatever else it holds. */
export const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

export interface SpamdRequest {
  /** The request line, e.g. `CHECK SPAMC/1.5`. */
  command: string;
  headers: Record<string, string>;
  message: Buffer;
}

/**
 * How the server behaves: `judge` answers as spamd does (spam when the message holds GTUBE), `refuse` answers with
 * spamd's protocol error status, `hang` reads the request and never answers.
 */
export type SpamdMode = 'judge' | 'refuse' | 'hang';

/**
 * A spamd on loopback speaking the SPAMC/1.5 protocol for CHECK, with GTUBE as its only rule. It keeps every
 * request it read, so a test can check what Mailroom sent. Judging, it holds back the answers for messages that
 * contain the text given to `holdAnswers`, until `releaseAnswers`: those messages wait for their 250 meanwhile.
 */
export async function startSpamdServer() {
  const requests: SpamdRequest[] = [];
  const sockets = new Set<Socket>();
  let mode: SpamdMode = 'judge';
  let holdMarker: string | undefined;
  const held: Array<() => void> = [];
  // Half-open: the client ends its side once the message is sent, and an answer (or, hanging, none) still follows.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const headerEnd = received.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const [command = '', ...lines] = received.subarray(0, headerEnd).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      const length = Number(headers['content-length']);
      const message = received.subarray(headerEnd + 4);
      if (message.length < length) return;
      socket.removeAllListeners('data');
      requests.push({ command, headers, message });
      if (mode === 'hang') return;
      if (mode === 'refuse') {
        socket.end('SPAMD/1.5 76 Bad header line: (Content-Length mismatch)\r\n\r\n');
        return;
      }
      const spam = message.includes(GTUBE);
      const answer = () =>
        socket.end(
          `SPAMD/1.1 0 EX_OK\r\nContent-length: 0\r\nSpam: ${spam ? 'True ; 1000.0' : 'False ; 0.4'} / 5.0\r\n\r\n`,
        );
      if (holdMarker !== undefined && message.includes(holdMarker)) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `spamd://127.0.0.1:${port}`,
    requests,
    setMode(next: SpamdMode) {
      mode = next;
    },
    holdAnswers(marker: string) {
      holdMarker = marker;
    },
    /** How many answers are held back. */
    get heldAnswers() {
      return held.length;
    },
    releaseAnswers() {
      holdMarker = undefined;
      for (const answer of held.splice(0)) answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export type SpamdServer = Awaited<ReturnType<typeof startSpamdServer>>;
