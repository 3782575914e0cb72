// Loads the daemon config: documented defaults (configs/brainstem.yaml) < user file <
// BRAINSTEM_* environment < programmatic overrides, then validates the merge once.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../util/repo-root.js';
import { formatIssue, type Issue } from '../../robot/common/validation/issue.js';
import { leaves } from '../../robot/common/validation/builders.js';
import { isPrototypeKey, PROTOTYPE_KEY_RULE } from '../../robot/common/validation/json-guard.js';
import { isRecord } from '../../robot/common/validation/values.js';
import { ENV_PREFIX, envOverrides } from './env.js';
import { daemonSchema, type Config } from './schema.js';
import { checkSecretStrength } from './secret-strength.js';
import { shownValue } from './url-secrets.js';

export const defaultConfigFile = join(repoRoot, 'configs', 'brainstem.yaml');

/** A bad config: the message lists every problem; the CLI exits with code 2. */
export class ConfigError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface LoadOptions {
  /** User config file merged over the defaults. */
  file?: string;
  /** Environment to read BRAINSTEM_* overrides from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Highest-priority values, e.g. from tests: partial config trees, later ones win. */
  overrides?: Record<string, unknown> | Record<string, unknown>[];
  defaultsFile?: string;
  /** Base for a relative data_dir (default process.cwd()). */
  cwd?: string;
}

type Tree = Record<string, unknown>;

/** Reads one YAML file into a mapping; every failure is a ConfigError naming the file. */
export function readYamlFile(file: string): Tree {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'file not found' : e.code === 'EISDIR' ? 'is a directory' : e.message;
    throw new ConfigError(`cannot read config file ${file}: ${why}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    // The parser's first line ends "at line L, column C:" before a code frame: keep the position, drop the colon.
    const first = (err as Error).message.split('\n')[0]!.replace(/:\s*$/, '');
    throw new ConfigError(`config file ${file} is not valid YAML: ${first}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isRecord(doc))
    throw new ConfigError(
      `config file ${file} must contain a mapping of keys at the top level, not ${Array.isArray(doc) ? 'a list' : typeof doc}`,
    );
  return doc;
}

/**
 * Deep-merges `src` into `dst`; null means "not set". Records where each value came from.
 * Prototype keys become issues: merging `__proto__` would write into Object.prototype.
 */
function mergeInto(
  dst: Tree,
  src: Tree,
  source: string,
  origins: Map<string, string>,
  issues: Issue[],
  prefix = '',
): void {
  for (const [k, v] of Object.entries(src)) {
    if (v === null || v === undefined) continue;
    const path = prefix ? `${prefix}.${k}` : k;
    origins.set(path, source);
    if (isPrototypeKey(k)) issues.push({ path, rule: PROTOTYPE_KEY_RULE, value: k });
    else if (!isRecord(v)) dst[k] = v;
    else {
      if (!isRecord(dst[k])) dst[k] = {};
      mergeInto(dst[k] as Tree, v, source, origins, issues, path);
    }
  }
}

function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = tree;
  for (const p of parts.slice(0, -1)) {
    if (!isRecord(node[p])) node[p] = {};
    node = node[p] as Tree;
  }
  node[parts[parts.length - 1]!] = value;
}

function originOf(path: string, origins: Map<string, string>): string | undefined {
  for (let p = path; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const o = origins.get(p);
    if (o) return o;
  }
  return undefined;
}

let secretPaths: Set<string> | undefined;

/** A config issue safe to print: the value of a `secret` key hidden, URL passwords masked. */
export function redactIssue(issue: Issue): Issue {
  secretPaths ??= new Set(
    leaves(daemonSchema)
      .filter(({ node }) => node.info.secret)
      .map(({ path }) => path),
  );
  // An unknown BRAINSTEM_* variable may be a misspelt secret (BRAINSTEM_SERVER_TOKN).
  const secret = secretPaths.has(issue.path) || issue.path.startsWith(ENV_PREFIX);
  return { ...issue, value: shownValue(issue.value, secret) };
}

export function formatConfigIssues(issues: Issue[], origins: Map<string, string> = new Map()): string {
  const lines = issues.map((i) => {
    const from = originOf(i.path, origins);
    return `  - ${formatIssue(redactIssue(i))}${from ? ` (from ${from})` : ''}`;
  });
  const n = issues.length;
  return `invalid configuration (${n} problem${n === 1 ? '' : 's'}):\n${lines.join('\n')}`;
}

export function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? join(homedir(), p.slice(1)) : p;
}

/** A configured path as the daemon opens it: `~` expanded, relative ones from `cwd`. */
export function configPath(p: string, cwd = process.cwd()): string {
  return resolve(cwd, expandHome(p));
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const origins = new Map<string, string>();
  const tree: Tree = {};
  const issues: Issue[] = [];
  const defaultsFile = opts.defaultsFile ?? defaultConfigFile;
  mergeInto(tree, readYamlFile(defaultsFile), defaultsFile, origins, issues);
  if (opts.file) mergeInto(tree, readYamlFile(opts.file), opts.file, origins, issues);
  const env = envOverrides(daemonSchema, opts.env ?? process.env);
  issues.push(...env.issues);
  for (const o of env.overrides) {
    setPath(tree, o.path, o.value);
    origins.set(o.path, o.name);
  }
  for (const layer of [opts.overrides ?? []].flat()) mergeInto(tree, layer, 'overrides', origins, issues);

  const config = daemonSchema.check(tree, '', issues);
  if (config && issues.length === 0) issues.push(...checkSecretStrength(config).issues);
  if (issues.length > 0 || !config) throw new ConfigError(formatConfigIssues(issues, origins));
  config.data_dir = configPath(config.data_dir, opts.cwd);
  return deepFreeze(config);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}
