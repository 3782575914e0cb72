// PEFT LoRA adapters (Hugging Face `save_pretrained`): adapter_config.json + adapter_model.safetensors
// with base_model.model.<module>.lora_A.weight [r, in] and .lora_B.weight [out, r]. Per module,
// rank_pattern / alpha_pattern override r / lora_alpha (first key k, in file order, such that the
// module name matches `(.*\.)?(k)$`, as PEFT's get_pattern_key); scale = alpha / r, or alpha / √r
// with use_rslora. Features that add tensors or change the math (DoRA, bias, modules_to_save,
// fan_in_fan_out, trainable tokens) are refused by name.
import { join } from 'node:path';
import { exists } from '../../util/file-roots.js';
import { readSafetensorsHeader, type TensorInfo } from '../../models/safetensors-reader.js';
import { ConfigJson } from './config-json.js';
import { AdapterError, layerOf, pairRank, pairTensors, plannedModule, type AdapterPlan } from './plan.js';
import { PatternTimeout, matchInWorker } from '../../util/regex-match.js';

const PREFIX = 'base_model.model.';
/** Time all of an adapter's patterns may take to match its module names. */
const PATTERN_MS = 2000;

function regex(source: string, what: string, file: string): RegExp {
  try {
    return new RegExp(source);
  } catch (e) {
    throw new AdapterError(
      `${file}: ${what} is not a regular expression this engine can run (${(e as Error).message})`,
    );
  }
}

/** A rank_pattern / alpha_pattern key as the regex PEFT's get_pattern_key tests a module name with. */
const keySource = (k: string) => `^(.*\\.)?(${k})$`;

/** The first pattern key matching `module` (PEFT get_pattern_key), or undefined. */
export function patternKey(keys: readonly string[], module: string, file: string, field: string): string | undefined {
  return keys.find((k) => regex(keySource(k), `${field} key ${JSON.stringify(k)}`, file).test(module));
}

/** target_modules as a regex source, when it is one (PEFT fullmatches a string against the name). */
function targetSource(c: ConfigJson): string | undefined {
  const target = c.raw.target_modules;
  return typeof target === 'string' && target !== 'all-linear' ? `^(?:${target})$` : undefined;
}

/** Which modules target_modules (+ layers_to_transform) selects, as PEFT's check_target_module_exists;
 *  `byRegex[i]`: whether module i matches a regex target_modules. */
function targetSelector(c: ConfigJson, byRegex: boolean[] | undefined): (module: string, i: number) => boolean {
  const target = c.raw.target_modules;
  let byName: (m: string, i: number) => boolean;
  if (typeof target === 'string') {
    byName = (_, i) => !byRegex || byRegex[i]!;
  } else if (Array.isArray(target) && target.every((t) => typeof t === 'string')) {
    byName = (m) => target.some((t) => m === t || m.endsWith(`.${t}`));
  } else {
    c.fail('target_modules', 'must be a list of module names, a regular expression or "all-linear"');
  }
  const raw = c.raw.layers_to_transform;
  if (raw === undefined || raw === null) return byName;
  const layers = typeof raw === 'number' ? [raw] : raw;
  if (!Array.isArray(layers) || !layers.every((l) => Number.isInteger(l) && l >= 0)) {
    c.fail('layers_to_transform', 'must be a layer index or a list of them');
  }
  return (m, i) => byName(m, i) && layers.includes(layerOf(m) ?? -1);
}

/**
 * The config's patterns (a regex target_modules, rank_pattern and alpha_pattern keys) tested against
 * every module name in a worker with a time limit; syntax is checked here first, naming the field.
 */
async function matchPatterns(
  c: ConfigJson,
  modules: string[],
  keys: Record<'rank_pattern' | 'alpha_pattern', string[]>,
) {
  const named: [string, string][] = [];
  const target = targetSource(c);
  if (target !== undefined) named.push(['target_modules', target]);
  const offset = { rank_pattern: 0, alpha_pattern: 0 };
  for (const field of ['rank_pattern', 'alpha_pattern'] as const) {
    offset[field] = named.length;
    for (const k of keys[field]) named.push([`${field} key ${JSON.stringify(k)}`, keySource(k)]);
  }
  for (const [what, source] of named) regex(source, what, c.file);
  let matches: boolean[][];
  try {
    matches = await matchInWorker(
      named.map(([, source]) => source),
      modules,
      PATTERN_MS,
    );
  } catch (err) {
    if (!(err instanceof PatternTimeout)) throw err;
    throw new AdapterError(
      `${c.file}: ${named[err.pattern]![0]} took over ${err.ms} ms to match ${modules.length} module name${modules.length === 1 ? '' : 's'} (a pattern that backtracks catastrophically); simplify it`,
    );
  }
  /** The first key of `field` matching module i (PEFT get_pattern_key), or undefined. */
  const firstKey = (field: keyof typeof offset, i: number) =>
    keys[field].find((_, j) => matches[offset[field] + j]![i]);
  return { target: target === undefined ? undefined : matches[0]!, firstKey };
}

function refuse(c: ConfigJson): void {
  if (c.has('peft_type') && c.str('peft_type') !== 'LORA')
    c.fail('peft_type', 'must be "LORA" (the only PEFT method brainstem runs)');
  if (c.bool('use_dora', false))
    c.fail('use_dora', 'must be false: DoRA adds a magnitude vector per module that brainstem does not apply');
  if (c.str('bias', 'none') !== 'none') c.fail('bias', 'must be "none": LoRA bias tensors are not supported');
  if (c.bool('lora_bias', false)) c.fail('lora_bias', 'must be false: a bias on lora_B is not supported');
  if (c.bool('fan_in_fan_out', false))
    c.fail('fan_in_fan_out', 'must be false: transposed (Conv1D) base layers are not supported');
  const mts = c.raw.modules_to_save;
  if (mts !== undefined && mts !== null && !(Array.isArray(mts) && mts.length === 0)) {
    c.fail(
      'modules_to_save',
      'must be null or empty: it ships full replacement modules, and brainstem never replaces base weights',
    );
  }
  if (c.has('trainable_token_indices'))
    c.fail('trainable_token_indices', 'must be null: trainable token embeddings are not supported');
}

function unexpected(file: string) {
  return (t: TensorInfo): never => {
    const n = t.name;
    const why = n.includes('lora_magnitude_vector')
      ? 'a DoRA magnitude vector (DoRA is not supported)'
      : n.includes('lora_embedding_')
        ? 'an embedding LoRA (only linear projections can carry one)'
        : n.includes('modules_to_save')
          ? 'a modules_to_save copy of a base module (not supported)'
          : n.endsWith('.bias')
            ? 'a bias (LoRA bias tensors are not supported)'
            : `not a PEFT LoRA tensor (expected ${PREFIX}<module>.lora_A.weight / .lora_B.weight)`;
    throw new AdapterError(`${file}: tensor ${n} is ${why}`);
  };
}

export async function readPeft(dir: string, layers: number, name: string): Promise<AdapterPlan> {
  const c = await ConfigJson.read(join(dir, 'adapter_config.json'));
  refuse(c);
  const r = c.int('r', 1, 8);
  const alpha = c.num('lora_alpha', 8);
  const rslora = c.bool('use_rslora', false);
  const ranks = c.numberMap('rank_pattern');
  const alphas = c.numberMap('alpha_pattern');
  const file = join(dir, 'adapter_model.safetensors');
  if (!(await exists(file))) {
    const bin = (await exists(join(dir, 'adapter_model.bin')))
      ? ' (adapter_model.bin is a pickle: convert it to safetensors)'
      : '';
    throw new AdapterError(`${dir}: PEFT adapter has adapter_config.json but no adapter_model.safetensors${bin}`);
  }
  const st = await readSafetensorsHeader(file);
  const moduleOf = (prefix: string) => {
    if (!prefix.startsWith(PREFIX))
      throw new AdapterError(`${file}: tensor ${prefix}.lora_… does not start with ${PREFIX}`);
    return prefix.slice(PREFIX.length);
  };
  const pairs = pairTensors(st.tensors.values(), '.lora_A.weight', '.lora_B.weight', moduleOf, unexpected(file));
  if (pairs.length === 0) throw new AdapterError(`${file}: has no LoRA tensors`);
  const patterns = await matchPatterns(
    c,
    pairs.map((p) => p.module),
    { rank_pattern: ranks.map(([k]) => k), alpha_pattern: alphas.map(([k]) => k) },
  );
  const selects = targetSelector(c, patterns.target);
  const modules = pairs.map((p, i) => {
    const rank = pairRank(p, false, file);
    const rk = patterns.firstKey('rank_pattern', i);
    const ak = patterns.firstKey('alpha_pattern', i);
    const rm = rk === undefined ? r : ranks.find(([k]) => k === rk)![1];
    const am = ak === undefined ? alpha : alphas.find(([k]) => k === ak)![1];
    if (!Number.isInteger(rm) || rm < 1) c.fail('rank_pattern', `must map to integers ≥ 1 (key ${JSON.stringify(rk)})`);
    if (rank !== rm) {
      const from = rk === undefined ? `r = ${r}` : `rank_pattern[${JSON.stringify(rk)}] = ${rm}`;
      throw new AdapterError(
        `${file}: tensor ${p.a!.name} has rank ${rank} (shape [${p.a!.shape.join(', ')}]) but adapter_config.json gives ${from} for ${p.module}`,
      );
    }
    if (!selects(p.module, i)) {
      throw new AdapterError(
        `${file}: tensor ${p.a!.name} targets ${p.module}, which adapter_config.json target_modules ${JSON.stringify(c.raw.target_modules)}${c.has('layers_to_transform') ? ` / layers_to_transform ${JSON.stringify(c.raw.layers_to_transform)}` : ''} does not select`,
      );
    }
    return plannedModule(p, rank, am / (rslora ? Math.sqrt(rm) : rm), false, file, layers);
  });
  return { name, file, format: 'peft', source: dir, modules };
}
