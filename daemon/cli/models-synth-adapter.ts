// `brainstem models synth-adapter`: a synthetic LoRA adapter (random A, B with a given ΔW RMS) for a
// model folder, in PEFT, mlx-lm or Edge0 layout: the input of adapter tests and `lora merge-check`.
import type { Command } from 'commander';
import { group, type CommandRegistrar } from './group.js';
import { CliError } from './exit.js';
import { intOption } from './bench-common.js';
import { oneOf } from './models-synth.js';
import { ADAPTER_FORMATS, type AdapterFormat } from '../engine/adapters/plan.js';
import { TARGET_NAMES } from '../tools/lora-targets.js';
import { synthAdapter, type AdapterDtype } from '../tools/synth-adapter.js';

interface RawOptions {
  model: string;
  out: string;
  format: string;
  rank: string;
  alpha: string;
  rms: string;
  seed: string;
  targets: string;
  numLayers?: string;
  dtype?: string;
  force?: boolean;
  json?: boolean;
}

function positive(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new CliError(`${flag} must be a positive number, got "${value}"`, 2);
  return n;
}

export const registerModelsSynthAdapter: CommandRegistrar = (program: Command) => {
  group(program, 'models')
    .command('synth-adapter')
    .description('write a synthetic LoRA adapter for a model folder (PEFT, mlx-lm or Edge0 layout)')
    .requiredOption('--model <dir>', 'model folder the adapter is for (config.json gives the shapes)')
    .requiredOption('--out <dir>', 'output folder (must be empty unless --force)')
    .option('--format <format>', `layout: ${ADAPTER_FORMATS.join(' | ')}`, 'peft')
    .option('--rank <r>', 'LoRA rank', '16')
    .option('--alpha <a>', 'alpha: scale alpha/r (mlx-lm: written as its absolute scale)', '32')
    .option('--rms <x>', "RMS of each module's ΔW = s·B·A", '1e-3')
    .option('--seed <n>', 'random seed (same seed, same bytes)', '0')
    .option('--targets <list>', `comma-separated: ${TARGET_NAMES.join(', ')}`, 'attention')
    .option('--num-layers <n>', 'adapt only the last n layers (default all)')
    .option('--dtype <dtype>', 'A/B dtype: F32 | F16 | BF16 (default F32; Edge0 F16)')
    .option('--force', 'write into a non-empty folder')
    .option('--json', 'print the result as JSON')
    .action((raw: RawOptions) => {
      const format = oneOf<AdapterFormat>('--format', raw.format, ADAPTER_FORMATS);
      const targets = raw.targets
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      for (const t of targets) oneOf('--targets', t, TARGET_NAMES);
      let result;
      try {
        result = synthAdapter({
          model: raw.model,
          out: raw.out,
          format,
          targets,
          rank: intOption('rank', raw.rank, 1, 4096),
          alpha: positive('--alpha', raw.alpha),
          rms: positive('--rms', raw.rms),
          seed: intOption('seed', raw.seed, 0, 2 ** 32 - 1),
          ...(raw.numLayers !== undefined ? { numLayers: intOption('num-layers', raw.numLayers, 1) } : {}),
          ...(raw.dtype !== undefined
            ? { dtype: oneOf<AdapterDtype>('--dtype', raw.dtype.toUpperCase(), ['F32', 'F16', 'BF16']) }
            : {}),
          force: raw.force === true,
        });
      } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError((e as Error).message, e instanceof RangeError ? 2 : 1);
      }
      const summary = {
        dir: result.dir,
        file: result.file,
        format,
        modules: result.modules.length,
        bytes: result.bytes,
      };
      if (raw.json) {
        process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `wrote a ${format} adapter (${result.modules.length} modules, ${result.bytes.toLocaleString('en-US')} bytes) to ${result.dir}\n`,
      );
    });
};
