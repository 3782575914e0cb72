// Secrets the daemon generates when the config leaves them empty (API token, embedded broker
// password): created once, stored in data_dir with mode 0600, reused on later starts.
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { leaves } from '../../robot/common/validation/builders.js';
import { makeDirs } from '../util/make-dirs.js';
import { ConfigError } from './load.js';
import { daemonSchema, type Config } from './schema.js';
import { redactUrl } from './url-secrets.js';

// Kept here too: callers import it from the secrets module.
export { redactUrl };

export interface Secret {
  value: string;
  /** Where the generated value lives; undefined when it came from the config. */
  file?: string;
  generated: boolean;
}

export function ensureDataDir(dataDir: string): void {
  makeDirs(dataDir, 0o700);
}

/** Returns `configured` when set, else the value stored in data_dir/name (creating it once). */
export function resolveSecret(configured: string, dataDir: string, name: string): Secret {
  if (configured !== '') return { value: configured, generated: false };
  const file = join(dataDir, name);
  try {
    const stored = readStored(file);
    if (stored) return { value: stored, file, generated: false };
    ensureDataDir(dataDir);
    makeDirs(dirname(file), 0o700);
    // 24 random bytes → 32 URL-safe characters: fits headers, query strings and MQTT passwords.
    const value = randomBytes(24).toString('base64url');
    const kept = storeOnce(file, value);
    return { value: kept, file, generated: kept === value };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      `cannot keep the generated ${name} in data_dir ${dataDir}: ${e.code ?? e.message} on ${e.path ?? file}; set data_dir (BRAINSTEM_DATA_DIR) to a writable directory`,
    );
  }
}

/**
 * Writes `value` unless the file appeared since it was read: two processes generating at once
 * would otherwise each use their own value and one of them would be refused later. Returns the
 * value that was kept.
 */
export function storeOnce(file: string, value: string): string {
  try {
    writeFileSync(file, value + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const winner = readStored(file);
    if (winner) return winner;
    // An empty file left behind (e.g. a full disk) is replaced, as before.
    writeFileSync(file, value + '\n', { mode: 0o600 });
  }
  chmodSync(file, 0o600);
  return value;
}

/** The value generated earlier in data_dir/name, if any (never creates one). */
export function storedSecret(dataDir: string, name: string): string | undefined {
  return readStored(join(dataDir, name));
}

function readStored(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** A copy of the config with every secret key and URL password masked. */
export function redactConfig(config: Config): Config {
  // biome-ignore lint/suspicious/noExplicitAny: walked by schema paths, whose nodes say what each value is
  const copy = structuredClone(config) as Record<string, any>;
  for (const { path, node } of leaves(daemonSchema)) {
    const parts = path.split('.');
    const parent = parts.slice(0, -1).reduce((o, p) => o?.[p], copy);
    const key = parts[parts.length - 1]!;
    if (!parent || typeof parent[key] !== 'string' || parent[key] === '') continue;
    if (node.info.secret) parent[key] = '***';
    else if (key === 'url') parent[key] = redactUrl(parent[key]);
  }
  return copy as Config;
}
