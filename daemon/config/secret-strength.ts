// Secrets long enough to resist guessing wherever another machine can try them: a configured
// secret shorter than MIN_SECRET_LENGTH is an error when its listener (or external broker) is off
// loopback, a warning on loopback. Messages name the key and rule, never the secret.
import { isIP } from 'node:net';
import { leaves } from '../../robot/common/validation/builders.js';
import type { Issue } from '../../robot/common/validation/issue.js';
import { daemonSchema, type Config } from './schema.js';
import { urlCredentials } from './url-secrets.js';

export const MIN_SECRET_LENGTH = 16;
/** Key prefix of the controllers' and observers' broker secrets, files under data_dir. */
export const IDENTITY_FILES = 'data_dir/mqtt-identities/';

/** 127.0.0.0/8, ::1 (also IPv4-mapped, bracketed) and localhost; wildcards and names are off loopback. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

interface Exposure {
  /** The key whose address decides, e.g. `server.host`. */
  key: string;
  host: string;
}

function brokerExposures(config: Config): Exposure[] {
  const { url, embedded } = config.mqtt;
  if (url !== '') return [{ key: 'mqtt.url', host: new URL(url).hostname }];
  const plain = { key: 'mqtt.embedded.host', host: embedded.host };
  return embedded.tls.cert ? [plain, { key: 'mqtt.embedded.tls.host', host: embedded.tls.host }] : [plain];
}

/** Where a secret at `path` can be tried from: its own listener, or (unknown sections) every one. */
function exposuresOf(path: string, config: Config): Exposure[] {
  const server = { key: 'server.host', host: config.server.host };
  if (path.startsWith('server.')) return [server];
  if (path.startsWith('mqtt.') || path.startsWith(IDENTITY_FILES)) return brokerExposures(config);
  return [server, ...brokerExposures(config)];
}

function valueAt(config: Config, path: string): unknown {
  // biome-ignore lint/suspicious/noExplicitAny: walked by schema paths
  return path.split('.').reduce<any>((o, k) => o?.[k], config);
}

export interface WeakSecret {
  path: string;
  length: number;
  /** The first off-loopback address it is exposed on, or undefined when loopback only. */
  offLoopback?: Exposure;
}

/**
 * Secrets shorter than the minimum: every non-empty `secret` key of the schema, the password
 * inside mqtt.url, and `resolved` values (generated or stored ones) by path, which win.
 */
export function weakSecrets(config: Config, resolved: Record<string, string> = {}): WeakSecret[] {
  const values = new Map<string, string>();
  for (const { path, node } of leaves(daemonSchema)) {
    const v = valueAt(config, path);
    if (node.info.secret && typeof v === 'string') values.set(path, v);
  }
  // A URL that does not parse or decode is mqtt.url's rule to report, not a crash here.
  const fromUrl = URL.canParse(config.mqtt.url) ? urlCredentials(new URL(config.mqtt.url)) : undefined;
  if (fromUrl) values.set('mqtt.url', fromUrl.password);
  for (const [path, v] of Object.entries(resolved)) values.set(path, v);
  const weak: WeakSecret[] = [];
  for (const [path, v] of values) {
    if (v === '' || v.length >= MIN_SECRET_LENGTH) continue;
    const offLoopback = exposuresOf(path, config).find((e) => !isLoopbackHost(e.host));
    weak.push({ path, length: v.length, ...(offLoopback ? { offLoopback } : {}) });
  }
  return weak;
}

/** The config error for a short secret reachable off loopback. */
export function weakSecretIssue(w: WeakSecret & { offLoopback: Exposure }): Issue {
  const subject = w.path === 'mqtt.url' ? 'its password must' : 'must';
  return {
    path: w.path,
    rule: `${subject} be at least ${MIN_SECRET_LENGTH} characters when ${w.offLoopback.key} (${w.offLoopback.host}) is off loopback; it has ${w.length}`,
    value: '***',
    hint: !w.path.startsWith('data_dir/')
      ? 'leave it empty to have a long one generated, or use e.g. `openssl rand -base64 24`'
      : w.offLoopback.key === 'mqtt.url'
        ? 'delete that file, run `brainstem mqtt credentials` to generate a long one, and reload Mosquitto'
        : 'delete that file to have a long one generated at the next start, or write e.g. `openssl rand -base64 24` into it',
  };
}

/** Errors for short secrets reachable off loopback, warnings for those on loopback only. */
export function checkSecretStrength(
  config: Config,
  resolved: Record<string, string> = {},
): { issues: Issue[]; warnings: string[] } {
  const issues: Issue[] = [];
  const warnings: string[] = [];
  for (const w of weakSecrets(config, resolved)) {
    if (w.offLoopback) issues.push(weakSecretIssue({ ...w, offLoopback: w.offLoopback }));
    else warnings.push(weakSecretWarning(w));
  }
  return { issues, warnings };
}

/** The warning for a short secret on loopback only. */
export function weakSecretWarning(w: WeakSecret): string {
  return `${w.path}: a secret of ${w.length} characters (shorter than ${MIN_SECRET_LENGTH}) is accepted only because it is used on loopback; binding off loopback will refuse it`;
}
