// The models the daemon serves: the configured ones, or, when none is configured (and
// engine.demo_model is on), a tiny random-weight qwen3_moe generated once under data_dir on first
// use, so the whole path runs on a fresh machine. Its output is gibberish by construction.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { configPath } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { synthModel } from '../tools/synth.js';
import { resolveProfile, type FileRootsConfig, type ModelProfile } from './config.js';

export const DEMO_MODEL = 'demo';
/** Bump when the synthetic format changes, so an old cached demo is not reused. */
const DEMO_FOLDER = 'demo-qwen3_moe-tiny-v1';

export function demoModelDir(dataDir: string): string {
  return join(dataDir, 'models', DEMO_FOLDER);
}

/** Writes the demo model unless it is already there (written to a temp folder, then renamed). */
export function ensureDemoModel(dir: string): boolean {
  // synthModel writes the index last, so its presence means a complete folder.
  if (existsSync(join(dir, 'model.safetensors.index.json'))) return false;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: tmp, seed: 1, force: true });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return true;
}

export interface ServedModels {
  models: Record<string, ModelProfile>;
  /** Set when serving the demo model: generates it before its first load. */
  demo?: { name: string; dir: string; prepare: () => boolean };
}

export function servedModels(config: Config, cwd = process.cwd()): ServedModels {
  const at = (p: string) => configPath(p, cwd);
  const entries = Object.entries(config.models);
  const roots = fileRoots(config, at);
  if (entries.length > 0) {
    const models = Object.fromEntries(
      entries.map(([name, m]) => [name, { ...resolveProfile(m, config.engine, at(m.path), at), roots }]),
    );
    return { models };
  }
  if (!config.engine.demo_model) return { models: {} };
  const dir = demoModelDir(config.data_dir);
  return {
    models: { [DEMO_MODEL]: { ...resolveProfile({ path: dir }, config.engine, dir), roots } },
    demo: { name: DEMO_MODEL, dir, prepare: () => ensureDemoModel(dir) },
  };
}

/** files.* roots plus the built-in ones: <data_dir>/models and /adapters, and what the config names. */
function fileRoots(config: Config, at: (p: string) => string): FileRootsConfig {
  const models = Object.values(config.models);
  return {
    models: [
      ...config.files.model_roots.map(at),
      join(config.data_dir, 'models'),
      ...models.flatMap((m) => withSnapshotBlobs(at(m.path))),
    ],
    adapters: [
      ...config.files.adapter_roots.map(at),
      join(config.data_dir, 'adapters'),
      ...models.flatMap((m) => Object.values(m.adapters ?? {}).map((a) => at(a.path))),
    ],
  };
}

/** A Hugging Face cache snapshot (`models--org--name/snapshots/<rev>`) links its files into the repo's
 *  `blobs/`, so a configured snapshot admits that folder too; any other folder is its own root. */
export function withSnapshotBlobs(dir: string): string[] {
  const rev = dirname(dir);
  if (basename(rev) !== 'snapshots' || !basename(dirname(rev)).startsWith('models--')) return [dir];
  return [dir, join(dirname(rev), 'blobs')];
}
