// A `bench compare` arm that runs a llama-bench binary (the native build, or one given by path)
// once per measurement, as its own process: prefill of P tokens (`-p P -n 0`) and, when asked,
// `gen` decode steps after P cached tokens (`-p 0 -n gen -d P`, as our decode follows the
// prompt). llama-bench draws its own random prompt ids; the models are synthetic, so only the
// count matters. Its JSON (`-o json`) gives each test's mean time.
import type { ArmTiming, BenchArm, CompareOptions } from './compare-bench.js';
import { LlamaBenchError, type Runner } from './llama-build.js';

/** One llama-bench test: prompt tokens, generated tokens, cached depth and its mean wall time. */
export interface LlamaBenchTest {
  nPrompt: number;
  nGen: number;
  nDepth: number;
  avgNs: number;
}

const num = (v: unknown, key: string, i: number): number => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new LlamaBenchError(
      `llama-bench JSON: test ${i}: ${key} must be a non-negative number, got ${JSON.stringify(v)}`,
    );
  return v;
};

/** Reads `llama-bench -o json` output: an array of tests, each with n_prompt, n_gen, n_depth, avg_ns. */
export function parseLlamaBenchJson(text: string): LlamaBenchTest[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new LlamaBenchError(`llama-bench printed no JSON (${(e as Error).message}): ${text.trim().slice(0, 200)}`);
  }
  if (!Array.isArray(raw) || raw.length === 0)
    throw new LlamaBenchError('llama-bench JSON: expected a non-empty array of tests');
  return raw.map((t, i) => {
    if (typeof t !== 'object' || t === null) throw new LlamaBenchError(`llama-bench JSON: test ${i} is not an object`);
    const r = t as Record<string, unknown>;
    return {
      nPrompt: num(r.n_prompt, 'n_prompt', i),
      nGen: num(r.n_gen, 'n_gen', i),
      nDepth: num(r.n_depth ?? 0, 'n_depth', i),
      avgNs: num(r.avg_ns, 'avg_ns', i),
    };
  });
}

export interface LlamaBenchArmOptions extends Pick<CompareOptions, 'threads' | 'kvCache'> {
  /** Arm name in the report (native, or the path given). */
  name: string;
  binary: string;
  gguf: string;
  run: Runner;
}

export function llamaBenchArm(o: LlamaBenchArmOptions): BenchArm {
  const kv = o.kvCache === 'f16' ? 'f16' : 'f32';
  const bench = async (p: number, n: number, depth: number): Promise<LlamaBenchTest> => {
    const args = ['-m', o.gguf, '-t', String(o.threads), '-p', String(p), '-n', String(n), '-d', String(depth)];
    args.push('-r', '1', '-ngl', '0', '-fa', 'off', '-ctk', kv, '-ctv', kv, '-o', 'json');
    const r = await o.run(o.binary, args);
    if (r.code !== 0)
      throw new LlamaBenchError(
        `${o.binary} ${args.join(' ')} exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(-500)}`,
      );
    const tests = parseLlamaBenchJson(r.stdout);
    const t = tests.find((x) => x.nPrompt === p && x.nGen === n && x.nDepth === depth);
    if (!t) throw new LlamaBenchError(`llama-bench JSON has no test with n_prompt ${p}, n_gen ${n}, n_depth ${depth}`);
    return t;
  };
  return {
    name: o.name,
    async run(prompt, gen): Promise<ArmTiming> {
      const prefill = await bench(prompt.length, 0, 0);
      const decode = gen > 0 ? await bench(0, gen, prompt.length) : undefined;
      return { prefillS: prefill.avgNs / 1e9, decodeS: decode ? decode.avgNs / 1e9 : 0 };
    },
    async dispose() {},
  };
}
