// `brainstem lora merge-check --model DIR --adapter DIR`: merges the adapter into a float copy of
// the chosen modules, re-quantises them to the model's int4 format and reports how much of the
// adapter survives, per module and at the logits (the evidence for keeping adapters unmerged).
import type { Command } from 'commander';
import { group, type CommandRegistrar } from './group.js';
import { CliError } from './exit.js';
import { intOption } from './bench-common.js';
import { AdapterError } from '../engine/adapters/plan.js';
import { mergeCheck, type MergeCheckResult } from '../tools/merge-check.js';
import { EngineError } from '../engine/native-model.js';
import { NativeLoadError } from '../native/binding.js';

interface RawOptions {
  model: string;
  adapter: string;
  modules?: string;
  prompts: string;
  tokens: string;
  threads: string;
  seed: string;
  weightsOnly?: boolean;
  json?: boolean;
}

const pct = (x: number | null) => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);

function printTable(r: MergeCheckResult): void {
  const w = Math.max(...r.modules.map((m) => m.module.length), 6);
  process.stdout.write(`${'module'.padEnd(w)}  rank  ΔW rms     step rms   retention  projection  codes changed\n`);
  for (const m of r.modules) {
    process.stdout.write(
      `${m.module.padEnd(w)}  ${String(m.rank).padStart(4)}  ${m.delta_rms.toExponential(2).padEnd(9)}  ${m.step_rms.toExponential(2).padEnd(9)}  ${pct(m.weight_retention).padStart(9)}  ${pct(m.weight_projection).padStart(10)}  ${pct(m.codes_changed).padStart(13)}\n`,
    );
  }
  for (const [k, v] of Object.entries(r.pooled))
    process.stdout.write(`pooled ${k}: retention ${pct(v.weight_retention)}, projection ${pct(v.weight_projection)}\n`);
  process.stdout.write(
    `logits retention: ${pct(r.logits_retention)} (projection ${pct(r.logits_projection)}, requantisation drift ${pct(r.logits_requant_drift)}) over ${r.prompts} prompts of ${r.tokens} tokens\n`,
  );
  const p = r.published;
  process.stdout.write(
    `published: attention projection ${pct(p.attention_projection)}, dense projection ${pct(p.dense_projection)}, logits ${pct(p.logits)}\n`,
  );
}

export const registerLoraMergeCheck: CommandRegistrar = (program: Command) => {
  group(program, 'lora')
    .command('merge-check')
    .description('how much of a LoRA survives merging into the int4 weights (per module and at the logits)')
    .requiredOption('--model <dir>', 'model folder (MLX int4)')
    .requiredOption('--adapter <dir>', 'adapter folder or file (PEFT, mlx-lm or Edge0)')
    .option('--modules <list>', "comma-separated module paths or in-layer suffixes (default: all of the adapter's)")
    .option('--prompts <n>', 'seeded random prompts for the logits comparison', '4')
    .option('--tokens <n>', 'tokens per prompt', '16')
    .option('--threads <n>', 'CPU threads for the engine', '1')
    .option('--seed <n>', 'prompt seed', '1')
    .option('--weights-only', 'skip the logits comparison')
    .option('--json', 'print JSON')
    .action(async (raw: RawOptions) => {
      const options = {
        model: raw.model,
        adapter: raw.adapter,
        ...(raw.modules !== undefined
          ? {
              modules: raw.modules
                .split(',')
                .map((s) => s.trim())
                .filter((s) => s !== ''),
            }
          : {}),
        prompts: intOption('prompts', raw.prompts, 1, 1000),
        tokens: intOption('tokens', raw.tokens, 1, 1 << 16),
        threads: intOption('threads', raw.threads, 1, 256),
        seed: intOption('seed', raw.seed, 0),
        weightsOnly: raw.weightsOnly === true,
      };
      let result: MergeCheckResult;
      try {
        result = await mergeCheck(options);
      } catch (e) {
        if (e instanceof AdapterError || e instanceof EngineError || e instanceof NativeLoadError)
          throw new CliError(e.message, 1);
        throw new CliError(`merge-check failed: ${(e as Error).message}`, 1);
      }
      if (raw.json || !process.stdout.isTTY) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else printTable(result);
    });
};
