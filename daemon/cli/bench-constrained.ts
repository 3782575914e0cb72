// `brainstem bench constrained`: cost of constrained decoding on a synthetic byte-level vocabulary
// (trie build, per-token mask time for cache misses and hits) with random logits, as JSON.
import type { Command } from 'commander';
import { runConstrainedBench } from '../bench/constrained-bench.js';
import { CliError } from './exit.js';
import { type CommandRegistrar, group } from './group.js';

interface Options {
  vocab: string;
  requests: string;
  maxTokens: string;
  seed: string;
  json?: boolean;
}

function positive(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`${flag} must be a positive integer, got ${JSON.stringify(v)}`, 2);
  return n;
}

async function run(o: Options): Promise<void> {
  const vocab = positive(o.vocab, '--vocab');
  const requests = positive(o.requests, '--requests');
  const maxTokens = positive(o.maxTokens, '--max-tokens');
  const seed = positive(o.seed, '--seed');
  const { report, misses, hits } = runConstrainedBench({ vocab, requests, maxTokens, seed });
  if (o.json || !process.stdout.isTTY) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    const rows: Array<[string, string]> = [
      ['vocabulary', `${report.vocab} tokens, ${report.trieNodes} trie nodes, built in ${report.trieBuildMs} ms`],
      ['tokens masked', `${report.tokens} over ${requests} requests`],
      [
        'cache miss',
        `${misses} × mean ${report.maskMissMs.mean} ms (p95 ${report.maskMissMs.p95}, max ${report.maskMissMs.max})`,
      ],
      ['cache hit', `${hits} × mean ${report.maskHitMs.mean} ms (p95 ${report.maskHitMs.p95})`],
    ];
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(14)} ${v}\n`);
  }
}

export const registerBenchConstrained: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('constrained')
    .description(
      'constrained decoding cost: trie build and per-token mask time on a synthetic byte-level vocabulary with random logits',
    )
    .option('--vocab <n>', 'vocabulary size', '152000')
    .option('--requests <n>', 'forced tool calls to generate', '5')
    .option('--max-tokens <n>', 'token budget per call', '256')
    .option('--seed <n>', 'seed for the vocabulary and the logits', '1')
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .action(run);
};
