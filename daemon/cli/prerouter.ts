// `brainstem prerouter calibrate|eval`: train prerouter heads for a model on a text (the
// model's own routing is the teacher) and measure their top-k recall on held-out text.
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { group, type CommandRegistrar } from './group.js';
import { CliError, optionError } from './exit.js';
import { intOption } from './bench-common.js';
import { runCalibration, runEval, type CalibrationReport, type EvalReport } from '../tools/prerouter-calibration.js';
import { EngineError } from '../engine/native-model.js';
import { TextTokenizer } from '../engine/tokenizer.js';
import type { CalibrationProgress } from '../native/binding.js';
import { NativeLoadError } from '../native/binding.js';

/** "a..b" (or "n") → [a, b]. */
export function parseLayers(value: string): [number, number] {
  const m = /^(\d+)(?:\.\.(\d+))?$/.exec(value.trim());
  const a = m ? Number(m[1]) : NaN;
  const b = m ? Number(m[2] ?? m[1]) : NaN;
  if (!m || b < a)
    throw new CliError(
      `--layers must be "a..b" with a ≤ b (owner layers; head N predicts layer N+1), got "${value}"`,
      2,
    );
  return [a, b];
}

function numberOption(name: string, value: string, lo: number, hi: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < lo || n > hi)
    throw new CliError(`--${name} must be a number in [${lo}, ${hi}], got "${value}"`, 2);
  return n;
}

async function readTokens(model: string, file: string): Promise<number[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(
      `--text ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (e as Error).message}`,
      2,
    );
  }
  let tok: TextTokenizer;
  try {
    tok = await TextTokenizer.fromDir(model);
  } catch (e) {
    throw new CliError(`--model ${model}: cannot load its tokenizer (${(e as Error).message})`, 1);
  }
  const tokens = tok.encode(text);
  if (tokens.length < 16)
    throw new CliError(`--text ${file} gives ${tokens.length} tokens; calibration needs at least 16`, 2);
  return tokens;
}

/** A one-line progress bar on stderr when it is a terminal. */
function progressBar(): ((p: CalibrationProgress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  return (p) => {
    const width = 30;
    const filled = Math.round((width * p.done) / Math.max(1, p.total));
    const what =
      p.phase === 'record'
        ? `recording routing ${p.done}/${p.total} tokens`
        : `training head ${p.owner} loss ${p.loss.toFixed(3)}`;
    process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${what}`.padEnd(90));
    if (p.done === p.total) process.stderr.write('\n');
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export function formatCalibration(r: CalibrationReport): string {
  const rows = [
    'layer → next   train/held-out   recall before → after   held-out before → after   loss before → after',
    ...r.layers.map(
      (l) =>
        `${String(l.layer).padStart(5)} → ${String(l.predicts).padEnd(4)}  ${`${l.train_samples}/${l.held_out_samples}`.padStart(14)}   ` +
        `${pct(l.recall_before).padStart(8)} → ${pct(l.recall_after).padEnd(10)}  ${pct(l.held_out_recall_before).padStart(9)} → ${pct(l.held_out_recall_after).padEnd(13)}  ` +
        `${l.loss_before.toFixed(3)} → ${l.loss_after.toFixed(3)}`,
    ),
    `mean recall ${pct(r.mean.recall_before)} → ${pct(r.mean.recall_after)}, held-out ${pct(r.mean.held_out_recall_before)} → ${pct(r.mean.held_out_recall_after)}`,
    `wrote ${r.layers.length} heads (top-k ${r.top_k}, ${r.units} units, ${r.steps} steps) to ${r.out} (${r.file_bytes} bytes) in ${r.seconds.toFixed(1)} s`,
  ];
  return rows.join('\n') + '\n';
}

export function formatEval(r: EvalReport): string {
  return (
    [
      'layer → next   samples   recall   zero-training recall',
      ...r.layers.map(
        (l) =>
          `${String(l.layer).padStart(5)} → ${String(l.predicts).padEnd(4)}  ${String(l.samples).padStart(8)}   ${pct(l.recall).padStart(6)}   ${pct(l.zero_training_recall).padStart(8)}`,
      ),
      `mean recall ${pct(r.mean.recall)} (zero-training heads: ${pct(r.mean.zero_training_recall)}) over ${r.tokens} tokens`,
    ].join('\n') + '\n'
  );
}

/** Before minutes of training: the heads file's folder must exist and be writable. */
function checkOutFolder(out: string): void {
  const dir = dirname(resolve(out));
  try {
    accessSync(dir, constants.W_OK);
  } catch (e) {
    throw new CliError(`--out ${out}: cannot write into ${dir} (${(e as NodeJS.ErrnoException).code})`, 2);
  }
  if (!statSync(dir).isDirectory()) throw new CliError(`--out ${out}: ${dir} is not a folder`, 2);
}

function engineErrors<T>(p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => {
    if (err instanceof EngineError) throw optionError(err, { topK: '--top-k' }) ?? new CliError(err.message, 1);
    if (err instanceof NativeLoadError) throw new CliError(err.message, 1);
    throw err;
  });
}

export const registerPrerouter: CommandRegistrar = (program: Command) => {
  const pr = group(program, 'prerouter');
  pr.command('calibrate')
    .description("train prerouter heads (imitating each next layer's router one token ahead) on a text")
    .requiredOption('--model <dir>', 'model folder')
    .requiredOption('--text <file>', 'UTF-8 text the model reads (its routing is the teacher)')
    .requiredOption('--out <file>', 'heads file to write (.safetensors, fp16)')
    .option('--layers <a..b>', 'owner layers to calibrate (head N predicts layer N+1); default all')
    .option('--steps <n>', 'Adam minibatch steps per head', '300')
    .option('--batch <n>', 'minibatch size', '32')
    .option('--lr <x>', 'Adam learning rate', '0.001')
    .option('--units <n>', 'fc1 outputs per head', '512')
    .option('--held-out <x>', 'fraction of the text (its tail) kept for the held-out recall', '0.1')
    .option('--top-k <k>', 'routing width the heads are for (default: the model’s)')
    .option('--threads <n>', 'threads for the model and the optimiser', '1')
    .option('--seed <n>', 'seed of the head initialisation and minibatch order', '1')
    .option('--json', 'print JSON')
    .action(
      async (o: Record<string, string | undefined> & { model: string; text: string; out: string; json?: boolean }) => {
        checkOutFolder(o.out);
        const tokens = await readTokens(o.model, o.text);
        const report = await engineErrors(
          runCalibration({
            model: o.model,
            tokens,
            out: o.out,
            source: `brainstem prerouter calibrate --text ${o.text}`,
            ...(o.layers ? { layers: parseLayers(o.layers) } : {}),
            steps: intOption('steps', o.steps!, 0),
            batch: intOption('batch', o.batch!, 1),
            lr: numberOption('lr', o.lr!, 1e-9, 10),
            units: intOption('units', o.units!, 1, 65536),
            heldOut: numberOption('held-out', o.heldOut!, 0, 0.9),
            threads: intOption('threads', o.threads!, 1, 256),
            seed: intOption('seed', o.seed!, 0),
            ...(o.topK !== undefined ? { topK: intOption('top-k', o.topK, 1) } : {}),
            onProgress: o.json ? undefined : progressBar(),
          }),
        );
        process.stdout.write(o.json ? JSON.stringify(report) + '\n' : formatCalibration(report));
      },
    );
  pr.command('eval')
    .description('top-k recall of prerouter heads against the true router on a text')
    .requiredOption('--model <dir>', 'model folder')
    .requiredOption('--heads <file>', 'heads file (.safetensors)')
    .requiredOption('--text <file>', 'UTF-8 text (held out from calibration)')
    .option('--top-k <k>', 'routing width (default: the model’s)')
    .option('--threads <n>', 'threads', '1')
    .option('--json', 'print JSON')
    .action(
      async (o: { model: string; heads: string; text: string; topK?: string; threads: string; json?: boolean }) => {
        const tokens = await readTokens(o.model, o.text);
        const report = await engineErrors(
          runEval({
            model: o.model,
            heads: o.heads,
            tokens,
            threads: intOption('threads', o.threads, 1, 256),
            ...(o.topK !== undefined ? { topK: intOption('top-k', o.topK, 1) } : {}),
            onProgress: o.json ? undefined : progressBar(),
          }),
        );
        process.stdout.write(o.json ? JSON.stringify(report) + '\n' : formatEval(report));
      },
    );
};
