// `brainstem bench constrained`: cost of constrained decoding on a synthetic byte-level vocabulary
// (trie build, per-token mask time for cache misses and hits) with random logits, as JSON.
import type { Command } from 'commander';
import { GrammarBuilder } from '../engine/constrained/grammar.js';
import { GrammarMasker } from '../engine/constrained/token-masker.js';
import { TokenTrie } from '../engine/constrained/token-trie.js';
import { syntheticByteVocab } from '../bench/synthetic-vocab.js';
import { parseTools } from '../engine/tool-calls/tools.js';
import { Prng } from '../../robot/common/prng.js';
import { CliError } from './exit.js';
import { type CommandRegistrar, group } from './group.js';

const TOOLS = parseTools([
  { type: 'function', function: { name: 'move_to', parameters: { type: 'object', properties: {
    target: { type: 'array', items: { type: 'number', minimum: -1, maximum: 1 }, minItems: 3, maxItems: 3 },
    note: { type: 'string' },
  }, required: ['target', 'note'] } } },
  { type: 'function', function: { name: 'set_gripper', parameters: { type: 'object', properties: {
    gripper: { type: 'number', minimum: 0, maximum: 1 }, arm: { enum: ['left', 'right'] },
  }, required: ['gripper'] } } },
]);

interface Options {
  vocab: string;
  requests: string;
  maxTokens: string;
  seed: string;
  json?: boolean;
}

function positive(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${flag} must be a positive integer, got ${JSON.stringify(v)}`, 2);
  return n;
}

function stats(xs: number[]): { mean: number; p50: number; p95: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : 0);
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  return { mean: round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)), p50: round(at(0.5)), p95: round(at(0.95)), max: round(at(1)) };
}

async function run(o: Options): Promise<void> {
  const size = positive(o.vocab, '--vocab');
  const requests = positive(o.requests, '--requests');
  const maxTokens = positive(o.maxTokens, '--max-tokens');
  const seed = positive(o.seed, '--seed');
  const { bytes, end } = syntheticByteVocab(seed, Math.max(size, 512));
  let t = performance.now();
  const trie = new TokenTrie({ bytes, endTokens: [end] });
  const trieMs = performance.now() - t;
  const b = new GrammarBuilder();
  const root = b.seq([b.lit('<tool_call>\n{"name": '), b.alt(TOOLS.map((tool) => b.seq([b.lit(`${JSON.stringify(tool.name)}, "arguments": `), b.schema(tool.schema)]))), b.lit('}\n</tool_call>')]);
  const masker = new GrammarMasker(trie, root);
  const r = new Prng(seed);
  const miss: number[] = [];
  const hit: number[] = [];
  const logits = new Float32Array(bytes.length);
  for (let q = 0; q < requests; q++) {
    const c = masker.start();
    for (let left = Math.max(maxTokens, c.minTokens); !c.complete; left--) {
      for (let i = 0; i < logits.length; i++) logits[i] = r.nextU32();
      const misses = masker.stats.misses;
      t = performance.now();
      c.mask(logits, left);
      (masker.stats.misses > misses ? miss : hit).push(performance.now() - t);
      let best = 0;
      for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
      c.accept(best);
    }
  }
  const report = {
    vocab: bytes.length,
    trieNodes: trie.size,
    trieBuildMs: Math.round(trieMs),
    requests,
    tokens: miss.length + hit.length,
    maskMissMs: stats(miss),
    maskHitMs: stats(hit),
    nodesVisitedPerMiss: Math.round(masker.stats.nodesVisited / Math.max(1, masker.stats.misses)),
  };
  if (o.json || !process.stdout.isTTY) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    const rows: Array<[string, string]> = [
      ['vocabulary', `${report.vocab} tokens, ${report.trieNodes} trie nodes, built in ${report.trieBuildMs} ms`],
      ['tokens masked', `${report.tokens} over ${requests} requests`],
      ['cache miss', `${miss.length} × mean ${report.maskMissMs.mean} ms (p95 ${report.maskMissMs.p95}, max ${report.maskMissMs.max})`],
      ['cache hit', `${hit.length} × mean ${report.maskHitMs.mean} ms (p95 ${report.maskHitMs.p95})`],
    ];
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(14)} ${v}\n`);
  }
}

export const registerBenchConstrained: CommandRegistrar = (program: Command) => {
  group(program, 'bench', 'Benchmarks that print JSON')
    .command('constrained')
    .description('Constrained decoding cost: trie build and per-token mask time on a synthetic byte-level vocabulary with random logits')
    .option('--vocab <n>', 'vocabulary size', '152000')
    .option('--requests <n>', 'forced tool calls to generate', '5')
    .option('--max-tokens <n>', 'token budget per call', '256')
    .option('--seed <n>', 'seed for the vocabulary and the logits', '1')
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .action(run);
};
