// A loopback HTTP server for tests that stand between a client and a real server: each request is
// counted and answered by the test (an error status, silence, or forwarded to the real server).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackServer {
  /** http://127.0.0.1:PORT/v1 */
  url: string;
  requests(): number;
  /** Closes it, dropping requests left unanswered. */
  close(): Promise<void>;
}

/** A loopback HTTP server; `handle` answers each request (n counts from 1). */
export async function serve(
  handle: (req: IncomingMessage, res: ServerResponse, n: number) => void,
): Promise<LoopbackServer> {
  let n = 0;
  const server: Server = createServer((req, res) => handle(req, res, ++n));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests: () => n,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Forwards a request to `origin` (same path) and its answer back (status and content-type);
 *  resolves with the request body. `authorization` replaces the client's when given. */
export async function forward(
  req: IncomingMessage,
  res: ServerResponse,
  origin: string,
  authorization?: string,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  const r = await fetch(`${origin}${req.url}`, {
    method: req.method,
    headers: { authorization: authorization ?? req.headers.authorization ?? '', 'content-type': 'application/json' },
    body,
  });
  res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
  res.end(Buffer.from(await r.arrayBuffer()));
  return body;
}
