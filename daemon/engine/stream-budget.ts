// Inputs of the streaming auto-size: the memory this process may use (the tightest memory
// cgroup limit over its own cgroup and its ancestors, else total memory) and a model folder's
// geometry read from config.json and the safetensors headers (no weights are read).
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { SafetensorsModel } from '../models/safetensors-reader.js';
import { findMemoryHierarchy } from '../util/cgroup.js';
import { readRegularTextSync } from '../util/file-roots.js';
import { autoStream, type AutoStream, type ModelGeometry } from './stream-autosize.js';
import { MODEL_TEXT_MAX_BYTES } from './tokenizer.js';

export interface MemoryBudget {
  bytes: number;
  /** Where it comes from: "cgroup v1 <dir>" or "total memory". */
  source: string;
}

/** Limits above this mean "no limit" (v1 reports ~2^63 rounded to pages). */
const UNLIMITED = 2 ** 60;

function readLimit(file: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    const n = Number(text);
    return text !== 'max' && Number.isFinite(n) && n > 0 && n < UNLIMITED ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The budget from the memory cgroup texts (null: not Linux or unreadable) and total memory. */
export function memoryBudget(total = totalmem()): MemoryBudget {
  let best: MemoryBudget = { bytes: total, source: 'total memory' };
  try {
    const h = findMemoryHierarchy(
      readFileSync('/proc/self/cgroup', 'utf8'),
      readFileSync('/proc/self/mountinfo', 'utf8'),
    );
    if (!h) return best;
    const file = h.version === 1 ? 'memory.limit_in_bytes' : 'memory.max';
    const parts = h.ownPath.split('/').filter((p) => p !== '');
    for (let i = parts.length; i >= 0; i--) {
      const dir = join(h.mountPoint, ...parts.slice(0, i));
      const limit = readLimit(join(dir, file));
      if (limit !== undefined && limit < best.bytes) best = { bytes: limit, source: `cgroup v${h.version} ${dir}` };
    }
  } catch {
    /* not Linux: total memory */
  }
  return best;
}

/** Routed-expert tensors: mlx-lm's stacked switch_mlp, or per-expert `experts.<e>.` (not shared experts). */
const ROUTED = /layers\.(\d+)\.mlp\.(?:switch_mlp|experts)\./;

/** A model folder's geometry; `topK` overrides the config's num_experts_per_tok. */
export function modelGeometry(dir: string, topK?: number): ModelGeometry {
  const raw = JSON.parse(readRegularTextSync(join(dir, 'config.json'), MODEL_TEXT_MAX_BYTES)) as Record<
    string,
    unknown
  >;
  const cfg = { ...raw, ...((raw.text_config as Record<string, unknown> | undefined) ?? {}) };
  const experts = Number(cfg.num_experts ?? cfg.n_routed_experts ?? 0);
  const st = SafetensorsModel.open(dir);
  try {
    let fileBytes = 0;
    let routed = 0;
    const layers = new Set<string>();
    for (const name of st.names()) {
      const t = st.info(name);
      fileBytes += t.end - t.begin;
      const m = ROUTED.exec(name);
      if (m) {
        routed += t.end - t.begin;
        layers.add(m[1]!);
      }
    }
    const moeLayers = layers.size;
    return {
      fileBytes,
      expertBytes: moeLayers > 0 && experts > 0 ? Math.round(routed / (moeLayers * experts)) : 0,
      moeLayers,
      experts,
      topK: topK ?? Number(cfg.num_experts_per_tok ?? 0),
    };
  } finally {
    st.close();
  }
}

export interface AutoChoice extends AutoStream {
  budget: MemoryBudget;
  geometry: ModelGeometry;
}

/** autoStreamFor, or undefined where the folder's geometry cannot be read (the engine's own defaults then apply, and its load reports the folder's problem). */
export function tryAutoStreamFor(dir: string, topK?: number): AutoChoice | undefined {
  try {
    return autoStreamFor(dir, topK);
  } catch {
    return undefined;
  }
}

/** The auto-sized profile for a model folder under this process's memory budget. */
export function autoStreamFor(dir: string, topK?: number, budget = memoryBudget()): AutoChoice {
  const geometry = modelGeometry(dir, topK);
  return { ...autoStream({ ...geometry, budgetBytes: budget.bytes }), budget, geometry };
}
