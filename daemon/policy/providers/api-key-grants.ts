// Which API keys a policy.start client may have the daemon send, and where. policy.api_key_envs
// lists environment variables as NAME (its value may go to any base_url a client names) or
// NAME=URL (only to base URLs at or under URL: same origin, path within URL's path), so a token
// holder cannot point an allowed key at a server of its own.

import { baseUrlProblem } from './provider-url.js';

export interface KeyGrant {
  env: string;
  /** The API root the key may go to (at or under it); undefined = any. */
  under?: URL;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why an api_key_envs entry is malformed, or undefined (the config's rule). */
export function grantProblem(entry: string): string | undefined {
  const [env = '', url] = splitEntry(entry);
  if (!ENV_NAME.test(env)) return 'must be NAME or NAME=URL with NAME an environment variable name';
  if (url === undefined) return undefined;
  const problem = baseUrlProblem(url);
  return problem ? `URL after "=" ${problem}` : undefined;
}

export function parseGrants(entries: readonly string[]): KeyGrant[] {
  return entries.map((e) => {
    const [env = '', url] = splitEntry(e);
    return url === undefined ? { env } : { env, under: new URL(url) };
  });
}

/** Why the key in `env` may not go to `baseUrl`, or null when a grant allows it. */
export function keyRefusal(grants: readonly KeyGrant[], env: string, baseUrl: string): string | null {
  const own = grants.filter((g) => g.env === env);
  if (own.length === 0)
    return `must be one of policy.api_key_envs (${[...new Set(grants.map((g) => g.env))].join(', ') || 'none configured'}), got ${JSON.stringify(env)}`;
  if (!URL.canParse(baseUrl)) return null; // base_url's own rule reports it
  const target = new URL(baseUrl);
  if (own.some((g) => g.under === undefined || within(target, g.under))) return null;
  return `${env} may only be sent to ${own.map((g) => g.under!.href).join(' or ')} (policy.api_key_envs), not to ${target.origin}${target.pathname}`;
}

function within(target: URL, root: URL): boolean {
  const base = root.pathname.endsWith('/') ? root.pathname : `${root.pathname}/`;
  return target.origin === root.origin && (target.pathname === root.pathname || `${target.pathname}/`.startsWith(base));
}

function splitEntry(entry: string): [string, string | undefined] {
  const at = entry.indexOf('=');
  return at < 0 ? [entry, undefined] : [entry.slice(0, at), entry.slice(at + 1)];
}
