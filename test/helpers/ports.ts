// A free loopback TCP port, for programs that cannot listen on port 0 themselves (Mosquitto
// treats port 0 as "unix socket"). Another process may grab it first: callers retry.
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on host:port, or rejects at the deadline. */
export async function waitForPort(
  host: string,
  port: number,
  timeoutMs: number,
  alive: () => boolean = () => true,
): Promise<void> {
  const deadline = performance.now() + timeoutMs; // monotonic: wall clocks can step
  while (performance.now() < deadline && alive()) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host);
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => (s.destroy(), resolve(false)));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listening on ${host}:${port} after ${timeoutMs} ms`);
}
