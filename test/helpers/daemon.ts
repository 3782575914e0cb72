// Test daemons on free ports with a temporary data_dir: in-process (direct access to every
// service and registry) or as a child process (signals, exit codes, CLI behaviour).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createDaemon, type DaemonParts } from '../../daemon/compose.js';
import { loadConfig } from '../../daemon/config/load.js';
import { Logs } from '../../daemon/log.js';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { readRuntimeInfo, type RuntimeInfo } from '../../daemon/runtime-file.js';
import { tempDir, type TempDir } from './temp.js';
import { within, waitFor } from './wait.js';

export const TEST_TOKEN = 'test-token-0123456789';

/** Log level for daemons under test: BRAINSTEM_TEST_LOG_LEVEL (default silent), to stderr. */
const testLogLevel = () => process.env.BRAINSTEM_TEST_LOG_LEVEL ?? 'silent';

/** Config layer every test daemon gets: free ports, fixed token, temp data_dir. */
function baseLayer(dataDir: string): Record<string, unknown> {
  return {
    data_dir: dataDir,
    server: { port: 0, token: TEST_TOKEN },
    mqtt: { embedded: { port: 0 } },
    logging: { level: testLogLevel(), format: 'json' },
    // No robots (nor their simulated controllers) unless a test serves some.
    robots: { simulate: false, serve: [] },
  };
}

export interface TestDaemon extends DaemonParts {
  dataDir: string;
  http: string;
  ws: string;
  /** The broker the daemon uses (URL without credentials) with the daemon's identity. */
  mqttEndpoint: { url: string; username: string; password: string };
  /** Another identity by username (robot.<id>, observer.<name>). */
  mqttAs(username: string): { url: string; username: string; password: string };
  stop(): Promise<void>;
}

/** Starts a daemon in this process. `overrides` are config layers (e.g. { mqtt: { url } }). */
export async function startTestDaemon(...overrides: Record<string, unknown>[]): Promise<TestDaemon> {
  const dir = tempDir('brainstem-daemon-');
  try {
    const config = loadConfig({ env: {}, overrides: [baseLayer(dir.path), ...overrides] });
    const logs = new Logs(config.logging, { destination: pino.destination({ dest: 2, sync: true }) });
    const parts = createDaemon(config, { logs });
    await parts.daemon.start();
    const external = config.mqtt.url ? new URL(config.mqtt.url) : undefined;
    const url = parts.broker ? parts.broker.url() : `${external!.protocol}//${external!.host}`;
    const as = (username: string) => {
      const id = parts.mqttIdentities.find((i) => i.username === username);
      if (!id) throw new Error(`no MQTT identity ${username}`);
      return { url, username, password: id.password };
    };
    return {
      ...parts,
      dataDir: dir.path,
      http: parts.api.url(),
      ws: parts.api.url('ws') + '/ws',
      mqttEndpoint: as(parts.mqttIdentities[0]!.username),
      mqttAs: as,
      stop: async () => {
        await parts.daemon.stop();
        dir.remove();
      },
    };
  } catch (err) {
    dir.remove();
    throw err;
  }
}

export interface ChildDaemon {
  child: ChildProcess;
  dataDir: string;
  runtime: RuntimeInfo;
  token: string;
  /** Password of the embedded broker (generated in data_dir) or the configured one. */
  mqttPassword: string;
  output(): { stdout: string; stderr: string };
  /** Resolves with the exit code (or signal name) once the process ends. */
  exited: Promise<number | string>;
  /** Kills it if still running and removes the data_dir. */
  cleanup(): Promise<void>;
}

export interface CliRun {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** The CLI entry that child processes run; `main` points at another build (e.g. one without the addon). */
export interface SpawnOptions {
  main?: string;
}

const mainJs = (o: SpawnOptions) => o.main ?? join(repoRoot, 'dist', 'daemon', 'main.js');

/** The environment without the caller's BRAINSTEM_* config (keeps BRAINSTEM_TEST_*). */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('BRAINSTEM_') || k.startsWith('BRAINSTEM_TEST_')),
  );
  return { ...env, ...extra };
}

/** Runs the CLI to completion (e.g. `config check FILE`). */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  opts: SpawnOptions & { timeoutMs?: number } = {},
): Promise<CliRun> {
  const child = spawn(process.execPath, [mainJs(opts), ...args], {
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await within(
    new Promise<number | string>((resolve) => child.once('close', (c, s) => resolve(c ?? s ?? 'unknown'))),
    opts.timeoutMs ?? 30_000,
    `brainstem ${args.join(' ')}`,
  ).finally(() => child.exitCode === null && child.kill('SIGKILL'));
  return { code, stdout, stderr };
}

/** Starts `brainstem start` as a child on free ports; waits for its runtime file. `env` adds BRAINSTEM_* settings. */
export async function spawnTestDaemon(
  env: Record<string, string> = {},
  opts: SpawnOptions & { args?: string[] } = {},
): Promise<ChildDaemon> {
  const dir: TempDir = tempDir('brainstem-child-');
  const child = spawn(process.execPath, [mainJs(opts), 'start', ...(opts.args ?? [])], {
    env: cleanEnv({
      BRAINSTEM_DATA_DIR: dir.path,
      BRAINSTEM_SERVER_PORT: '0',
      BRAINSTEM_MQTT_EMBEDDED_PORT: '0',
      BRAINSTEM_LOGGING_LEVEL: process.env.BRAINSTEM_TEST_LOG_LEVEL ?? 'info',
      BRAINSTEM_LOGGING_FORMAT: 'json',
      BRAINSTEM_ROBOTS_SIMULATE: 'false',
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (c, s) => resolve(c ?? s ?? 'unknown')));
  const cleanup = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    dir.remove();
  };
  // env may name another data_dir (e.g. one nothing has created yet); the temp dir stays for cleanup.
  const dataDir = env.BRAINSTEM_DATA_DIR ?? dir.path;
  try {
    const runtime = await waitFor(
      () => {
        if (child.exitCode !== null)
          throw new Error(`daemon exited with ${child.exitCode} before it was ready:\n${stderr}\n${stdout}`);
        const r = readRuntimeInfo(dataDir);
        return r?.pid === child.pid ? r : undefined;
      },
      'the child daemon to write daemon.json',
      20_000,
    );
    const read = (name: string) => readFileSync(join(dataDir, name), 'utf8').trim();
    return {
      child,
      dataDir,
      runtime,
      token: env.BRAINSTEM_SERVER_TOKEN ?? read('token'),
      mqttPassword: env.BRAINSTEM_MQTT_PASSWORD ?? (runtime.mqtt_embedded ? read('mqtt-password') : ''),
      output: () => ({ stdout, stderr }),
      exited,
      cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
