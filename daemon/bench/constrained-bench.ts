// `bench constrained` core: a synthetic byte-level vocabulary's trie, then forced tool calls
// decoded with random logits, timing each token's mask (cache misses and hits apart).
import { GrammarBuilder } from '../engine/constrained/grammar.js';
import { GrammarMasker } from '../engine/constrained/token-masker.js';
import { TokenTrie } from '../engine/constrained/token-trie.js';
import { parseTools } from '../engine/tool-calls/tools.js';
import { Prng } from '../../robot/common/prng.js';
import { syntheticByteVocab } from './synthetic-vocab.js';

const TOOLS = parseTools([
  {
    type: 'function',
    function: {
      name: 'move_to',
      parameters: {
        type: 'object',
        properties: {
          target: { type: 'array', items: { type: 'number', minimum: -1, maximum: 1 }, minItems: 3, maxItems: 3 },
          note: { type: 'string' },
        },
        required: ['target', 'note'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'set_gripper',
      parameters: {
        type: 'object',
        properties: {
          gripper: { type: 'number', minimum: 0, maximum: 1 },
          arm: { enum: ['left', 'right'] },
        },
        required: ['gripper'],
      },
    },
  },
]);

export interface ConstrainedBenchOptions {
  /** Vocabulary size (at least 512 are generated). */
  vocab: number;
  /** Forced tool calls to generate. */
  requests: number;
  /** Token budget per call. */
  maxTokens: number;
  /** Seed for the vocabulary and the logits. */
  seed: number;
}

export interface MaskStats {
  mean: number;
  p50: number;
  p95: number;
  max: number;
}

export interface ConstrainedBenchReport {
  vocab: number;
  trieNodes: number;
  trieBuildMs: number;
  requests: number;
  tokens: number;
  maskMissMs: MaskStats;
  maskHitMs: MaskStats;
  nodesVisitedPerMiss: number;
}

function stats(xs: number[]): MaskStats {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : 0);
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  return {
    mean: round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)),
    p50: round(at(0.5)),
    p95: round(at(0.95)),
    max: round(at(1)),
  };
}

/** The report and how many masks were cache misses and hits. */
export function runConstrainedBench(o: ConstrainedBenchOptions): {
  report: ConstrainedBenchReport;
  misses: number;
  hits: number;
} {
  const { requests, maxTokens, seed } = o;
  const { bytes, end } = syntheticByteVocab(seed, Math.max(o.vocab, 512));
  let t = performance.now();
  const trie = new TokenTrie({ bytes, endTokens: [end] });
  const trieMs = performance.now() - t;
  const b = new GrammarBuilder();
  const root = b.seq([
    b.lit('<tool_call>\n{"name": '),
    b.alt(TOOLS.map((tool) => b.seq([b.lit(`${JSON.stringify(tool.name)}, "arguments": `), b.schema(tool.schema)]))),
    b.lit('}\n</tool_call>'),
  ]);
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
  const report: ConstrainedBenchReport = {
    vocab: bytes.length,
    trieNodes: trie.size,
    trieBuildMs: Math.round(trieMs),
    requests,
    tokens: miss.length + hit.length,
    maskMissMs: stats(miss),
    maskHitMs: stats(hit),
    nodesVisitedPerMiss: Math.round(masker.stats.nodesVisited / Math.max(1, masker.stats.misses)),
  };
  return { report, misses: miss.length, hits: hit.length };
}
