// Loads robot and setup configs from configs/robots/ (<name>.yaml, URDFs beside them).
// The only file I/O of the motion stack's description layer.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { parseRobotConfig } from './robot-config.js';
import { isSetupConfig, parseSetupConfig, singleArmSetup } from './setup-config.js';
import type { Issue } from '../common/validation/issue.js';
import { descriptionPath } from './checker.js';
import type { RobotDescription, SetupDescription, Validated } from './types.js';

/** configs/robots/ of this package (from dist/robot/description/). */
export const ROBOTS_DIR = fileURLToPath(new URL('../../../configs/robots/', import.meta.url));

type Raw = { ok: true; raw: unknown } | { ok: false; issues: Issue[] };

function readConfig(name: string, dir: string): Raw {
  const file = join(dir, `${name}.yaml`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { ok: false, issues: [{ path: descriptionPath(name, 'config file'), value: file, rule: 'cannot be read' }] };
  }
  try {
    const raw: unknown = parseYaml(text);
    const declared = typeof raw === 'object' && raw !== null ? (raw as { name?: unknown }).name : undefined;
    if (declared !== name)
      return {
        ok: false,
        issues: [{ path: descriptionPath(name, 'name'), value: declared, rule: `must equal the file name "${name}"` }],
      };
    return { ok: true, raw };
  } catch (err) {
    return {
      ok: false,
      issues: [
        {
          path: descriptionPath(name, 'config file'),
          value: file,
          rule: `is not valid YAML: ${(err as Error).message}`,
        },
      ],
    };
  }
}

export function loadRobot(name: string, dir: string = ROBOTS_DIR): Validated<RobotDescription> {
  const r = readConfig(name, dir);
  if (!r.ok) return r;
  if (isSetupConfig(r.raw))
    return {
      ok: false,
      issues: [
        { path: descriptionPath(name, 'arms'), value: name, rule: 'this is a multi-arm setup; load it with loadSetup' },
      ],
    };
  return parseRobotConfig(r.raw, {
    readText(file) {
      try {
        return readFileSync(join(dir, file), 'utf8');
      } catch {
        return undefined;
      }
    },
  });
}

export function loadSetup(name: string, dir: string = ROBOTS_DIR): Validated<SetupDescription> {
  const r = readConfig(name, dir);
  if (!r.ok) return r;
  if (!isSetupConfig(r.raw))
    return {
      ok: false,
      issues: [{ path: descriptionPath(name, 'arms'), value: undefined, rule: 'a setup config needs a list of arms' }],
    };
  return parseSetupConfig(r.raw, (robot) => loadRobot(robot, dir));
}

/** Config names in `dir` (robots and setups). */
export function listConfigs(dir: string = ROBOTS_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -5))
    .sort();
}

/** A robot or a multi-arm setup, whichever `name` is. */
export function loadDescription(
  name: string,
  dir: string = ROBOTS_DIR,
): Validated<RobotDescription | SetupDescription> {
  const r = readConfig(name, dir);
  if (!r.ok) return r;
  return isSetupConfig(r.raw) ? loadSetup(name, dir) : loadRobot(name, dir);
}

/** A robot or a setup by name, as arms: a single robot becomes a one-arm setup (arm `arm`). */
export function loadArms(
  name: string,
  dir: string = ROBOTS_DIR,
): Validated<{ kind: 'robot' | 'setup'; setup: SetupDescription }> {
  const d = loadDescription(name, dir);
  if (!d.ok) return d;
  return {
    ok: true,
    value: 'arms' in d.value ? { kind: 'setup', setup: d.value } : { kind: 'robot', setup: singleArmSetup(d.value) },
  };
}
