// `brainstem start [--config FILE]`: runs the daemon in the foreground until SIGINT/SIGTERM.
import type { Command } from 'commander';
import { createDaemon } from '../compose.js';
import { loadConfig } from '../config/load.js';
import { stopOnSignals } from '../daemon.js';
import { WS_PATH } from '../api/server.js';
import { Logs } from '../log.js';
import { tryLoadNative } from '../native/binding.js';
import { removeRuntimeInfo, runtimeFile, writeRuntimeInfo } from '../runtime-file.js';
import { acquireLock, LockedError, releaseLock } from '../runtime-lock.js';
import { ConfigError } from '../config/load.js';
import { ensureDataDir, redactUrl } from '../config/secrets.js';
import { VERSION } from '../version.js';
import { CliError } from './exit.js';

/** Runs until a signal stops the daemon; resolves with the process exit code. */
export async function runDaemon(configFile?: string): Promise<number> {
  const config = loadConfig({ file: configFile });
  const logs = new Logs(config.logging);
  const log = logs.get('daemon');
  const parts = createDaemon(config, { logs });
  const { daemon, api, broker, token } = parts;
  if (token.file)
    log.info(
      { token_file: token.file },
      `${token.generated ? 'generated an API token' : 'API token'} in ${token.file}`,
    );
  // Only a generated secret creates data_dir; daemon.json and the lock need it in every setup.
  try {
    ensureDataDir(config.data_dir);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      `cannot create data_dir ${config.data_dir}: ${e.code ?? e.message} on ${e.path ?? config.data_dir}; set data_dir (BRAINSTEM_DATA_DIR) to a writable directory`,
    );
  }
  try {
    acquireLock(config.data_dir);
  } catch (err) {
    if (err instanceof LockedError) throw new CliError(`cannot start: ${err.message}`, 1);
    throw err;
  }
  // Sync, so it also runs on process.exit from the uncaught-exception and forced-exit paths.
  process.on('exit', () => cleanupOnExit(config.data_dir));
  const native = tryLoadNative();
  if (native.error) log.warn(`${native.error}; the API and MQTT run without the inference engine`);
  await native.addon?.probeDevices().catch((err) => log.warn({ err }, 'the GPU probe failed'));

  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled promise rejection'));
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception: stopping');
    void daemon.stop().finally(() => process.exit(1));
  });
  const stopped = stopOnSignals(daemon, log, process, (code) => process.exit(code));
  try {
    await daemon.start();
  } catch (err) {
    throw new CliError(`could not start: ${(err as Error).message}`, 1);
  }
  try {
    if (daemon.currentState === 'running') announce();
  } catch (err) {
    // Every service is running: stop them before giving up rather than exit under them.
    log.error({ err }, `cannot write ${runtimeFile(config.data_dir)}: stopping`);
    await daemon.stop();
    throw new CliError(`cannot write ${runtimeFile(config.data_dir)}: ${(err as Error).message}`, 1);
  }
  const code = await stopped;
  cleanupOnExit(config.data_dir);
  return code;

  function announce(): void {
    writeRuntimeInfo(config.data_dir, {
      pid: process.pid,
      version: VERSION,
      started_at: new Date().toISOString(),
      http: api.url(),
      ws: api.url('ws') + WS_PATH,
      mqtt: broker ? broker.url() : config.mqtt.url ? redactUrl(config.mqtt.url) : null,
      mqtt_embedded: broker !== undefined,
      ...(token.file ? { token_file: token.file } : {}),
    });
  }
}

/** Removes daemon.json and the lock when they are this process's (both checks are by pid). */
export function cleanupOnExit(dataDir: string): void {
  removeRuntimeInfo(dataDir);
  releaseLock(dataDir);
}

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('run the daemon in the foreground until SIGINT or SIGTERM')
    .option('-c, --config <file>', 'config file merged over configs/brainstem.yaml')
    .action(async (opts: { config?: string }) => {
      process.exit(await runDaemon(opts.config));
    });
}
