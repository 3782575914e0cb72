// `bench lora`: the decode cost of an unmerged adapter. One model, two sessions on the same
// prompt (base and adapter), decoded alternately token by token so machine load drifts hit both
// alike; per-token wall times give each side's tok/s and the adapter's overhead. The process's
// CPU time per token is reported too: on a shared, loaded machine it is the steadier measure.
import { Prng } from '../../robot/common/prng.js';
import { NativeModel, argmax, type NativeSession } from '../engine/native-model.js';
import { readAdapter } from '../engine/adapters/read-adapter.js';

export interface LoraBenchOptions {
  model: string;
  adapter: string;
  threads: number;
  prompt: number;
  gen: number;
  seed: number;
}

export interface LoraBenchResult {
  model: string;
  adapter: string;
  format: string;
  adapter_modules: number;
  adapter_ranks: number[];
  adapter_bytes: number;
  threads: number;
  prompt_tokens: number;
  gen_tokens: number;
  base_decode_tok_s: number;
  adapter_decode_tok_s: number;
  /** 1 − adapter tok/s ÷ base tok/s (medians of the per-token times). */
  overhead: number;
  base_ms_per_token: number;
  adapter_ms_per_token: number;
  /** Process CPU time (all threads) per token, medians, and the overhead they give. */
  base_cpu_ms_per_token: number;
  adapter_cpu_ms_per_token: number;
  cpu_overhead: number;
}

export interface BenchClocks {
  /** Wall clock, nanoseconds. */
  wall: () => bigint;
  /** Process CPU time (user + system), microseconds. */
  cpu: () => number;
}

const realClocks: BenchClocks = {
  wall: () => process.hrtime.bigint(),
  cpu: () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  },
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function runLoraBench(o: LoraBenchOptions, clocks: BenchClocks = realClocks): Promise<LoraBenchResult> {
  const model = await NativeModel.load(o.model, { threads: o.threads, contextLength: o.prompt + o.gen });
  const sessions: NativeSession[] = [];
  try {
    const plan = await readAdapter(o.adapter, { layers: model.summary.layers });
    const adapter = await model.loadAdapter(plan);
    sessions.push(await model.createSession(), await model.createSession());
    sessions[1]!.setAdapter(adapter);
    const rng = new Prng(o.seed);
    const prompt = Int32Array.from({ length: o.prompt }, () => rng.int(model.summary.vocabSize));
    const logits = [await sessions[0]!.prefill(prompt), await sessions[1]!.prefill(prompt)];
    const times: number[][] = [[], []];
    const cpu: number[][] = [[], []];
    for (let i = 0; i < o.gen; i++) {
      // Alternate which side goes first, so neither always follows the other.
      for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const [t0, c0] = [clocks.wall(), clocks.cpu()];
        logits[k] = await sessions[k]!.decode(argmax(logits[k]!));
        times[k]!.push(Number(clocks.wall() - t0) / 1e6);
        cpu[k]!.push((clocks.cpu() - c0) / 1e3);
      }
    }
    const [base, tuned] = [median(times[0]!), median(times[1]!)];
    const [baseCpu, tunedCpu] = [median(cpu[0]!), median(cpu[1]!)];
    return {
      model: o.model,
      adapter: o.adapter,
      format: plan.format,
      adapter_modules: plan.modules.length,
      adapter_ranks: [...new Set(adapter.summary.modules.map((m) => m.rank))].sort((a, b) => a - b),
      adapter_bytes: adapter.summary.bytes,
      threads: model.summary.threads,
      prompt_tokens: o.prompt,
      gen_tokens: o.gen,
      base_decode_tok_s: 1000 / base,
      adapter_decode_tok_s: 1000 / tuned,
      overhead: 1 - base / tuned,
      base_ms_per_token: base,
      adapter_ms_per_token: tuned,
      base_cpu_ms_per_token: baseCpu,
      adapter_cpu_ms_per_token: tunedCpu,
      cpu_overhead: 1 - baseCpu / tunedCpu,
    };
  } finally {
    for (const s of sessions) s.dispose();
    model.dispose();
  }
}
