// Test infrastructure for the simulator process: a Mosquitto broker on an ephemeral port (or
// the one CI gives in BRAINSTEM_TEST_MOSQUITTO_URL), the sim as a child process, polling waits.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Broker {
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** A reachable Mosquitto, or null (with the reason) when there is none to use. */
export async function startMosquitto(): Promise<Broker | string> {
  const given = process.env.BRAINSTEM_TEST_MOSQUITTO_URL;
  if (given) return { url: given, stop: async () => undefined };
  if (spawnSync('mosquitto', ['-h']).error)
    return 'mosquitto is not on PATH and BRAINSTEM_TEST_MOSQUITTO_URL is not set';
  const dir = mkdtempSync(join(tmpdir(), 'bs-mosq-'));
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  const child = spawn('mosquitto', ['-c', conf], { stdio: 'ignore' });
  await waitFor(() => canConnect(port), 5000, `mosquitto listening on ${port}`);
  return {
    url: `mqtt://127.0.0.1:${port}`,
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Polls `cond` every 10 ms until true; rejects after `ms` with `what` and `detail()`. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
  detail: () => string = () => '',
): Promise<void> {
  const until = performance.now() + ms; // monotonic: wall clocks can step
  while (!(await cond())) {
    if (performance.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what} ${detail()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const MAIN = fileURLToPath(new URL('../../../daemon/main.js', import.meta.url));

export interface SimChild {
  child: ChildProcess;
  stderr(): string;
}

export function spawnSim(args: string[]): SimChild {
  const child = spawn(process.execPath, [MAIN, 'sim', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += d.toString()));
  return { child, stderr: () => err };
}

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}
