// BRAINSTEM_* environment overrides: the env name of a key is its upper-cased dotted path
// with dots as underscores (server.port → BRAINSTEM_SERVER_PORT).
import { leaves, type Node } from '../../robot/common/validation/builders.js';
import type { Issue } from '../../robot/common/validation/issue.js';

export const ENV_PREFIX = 'BRAINSTEM_';

export function envName(path: string): string {
  return ENV_PREFIX + path.toUpperCase().replace(/\./g, '_');
}

export interface EnvOverride {
  path: string;
  name: string;
  value: unknown;
}

/** Parses numbers and booleans for typed keys; leaves text that does not parse for the validator. */
function parse(node: Node<unknown>, raw: string): unknown {
  const kind = node.info.kind;
  if ((kind === 'integer' || kind === 'number') && /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(raw))
    return Number(raw);
  if (kind === 'boolean') {
    const b = raw.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(b)) return true;
    if (['false', '0', 'no', 'off'].includes(b)) return false;
  }
  return raw;
}

/**
 * Collects overrides for every scalar key. Variables that start like a closed section
 * (BRAINSTEM_SERVER_...) but name no key are reported, so typos do not pass silently; so are
 * those under a section of names (BRAINSTEM_MODELS_...), which only a config file can set.
 */
export function envOverrides(
  schema: Node<unknown>,
  env: NodeJS.ProcessEnv,
): { overrides: EnvOverride[]; issues: Issue[] } {
  const keys = leaves(schema).map(({ path, node }) => ({ path, node, name: envName(path) }));
  const byName = new Map(keys.map((k) => [k.name, k]));
  const closed = Object.entries(schema.info.fields ?? {})
    .filter(([, n]) => n.info.fields)
    .map(([k]) => envName(k) + '_');
  // Mappings of names (models) and lists have no fixed keys to name in a variable.
  const whole = Object.entries(schema.info.fields ?? {})
    .filter(([, n]) => !n.info.fields && ['mapping', 'list', 'any'].includes(n.info.kind))
    .map(([k]) => ({ key: k, prefix: envName(k) + '_' }));
  const overrides: EnvOverride[] = [];
  const issues: Issue[] = [];
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined || !name.startsWith(ENV_PREFIX)) continue;
    const key = byName.get(name);
    if (key) overrides.push({ path: key.path, name, value: parse(key.node, raw) });
    else if (closed.some((p) => name.startsWith(p))) {
      const near = keys
        .filter((k) => k.name.startsWith(name.split('_').slice(0, 2).join('_') + '_'))
        .map((k) => k.name);
      issues.push({
        path: name,
        rule: `is not a known configuration variable (known: ${near.join(', ')})`,
        value: raw,
      });
    } else {
      const section = whole.find((w) => name.startsWith(w.prefix));
      if (section)
        issues.push({
          path: name,
          rule: `cannot be set from the environment: ${section.key} is a ${schema.info.fields![section.key]!.info.type}, set it in a config file (-c)`,
          value: raw,
        });
    }
  }
  return { overrides, issues };
}
