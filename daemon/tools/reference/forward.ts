// Float64 reference forward pass of qwen3_moe, glm4_moe, qwen3_next, qwen3_5_moe and bailing_moe_linear MLX folders
// (the test oracle for the C++ engine): reads the safetensors with the TS reader, dequantises in float64, one token at a
// time with a KV cache. Slow by design; meant for tiny shapes (moe-small works, seconds/token).
import { readRefConfig, type RefConfig } from './model-config.js';
import { matvec, RefWeights } from './weights.js';
import { attend, axpy, mropeSlots, rmsNorm, rmsNormHeads, rope, sigmoid, silu } from './ops.js';
import { routeSigmoidGroup, routeSoftmaxTopK, type Route } from './routing.js';
import { filePrerouter, zeroTrainingPrerouter, type RefPrerouter } from './prerouter.js';
import { addLoraDelta, type FloatAdapter } from './adapter-weights.js';
import {
  cloneLinearState,
  emptyLinearState,
  linearStep,
  unfuse,
  type LinearInputs,
  type LinearState,
} from './linear-attention.js';
import { emptyLightningState, lightningDecays, lightningStep } from './lightning.js';

export interface ReferenceOptions {
  /** Observes every routing decision (layer, chosen experts, their weights). */
  onRoute?: (layer: number, route: Route) => void;
  /** Prerouter semantics: at a decode step, a layer whose routing was predicted at the previous
   *  token by the head of the layer below is routed by that prediction (its router is replaced
   *  by the head). "zero-training" or a heads file. Prefill always uses the routers. */
  prerouter?: 'zero-training' | string;
  /** Routing width override (the model's num_experts_per_tok otherwise). */
  topK?: number;
  /** An unmerged LoRA (module path → A, B, scale): y = W x + s·B(A x) on those projections. */
  adapter?: FloatAdapter;
}

/** One token's multimodal input: its embedding instead of the token's, DeepStack features added
 *  after layers 0.., and its (time, height, width) RoPE position. */
export interface RefTokenInput {
  embed?: Float64Array;
  deepstack?: Float64Array[];
  pos3?: readonly [number, number, number];
}

export interface ReferenceModel {
  readonly config: RefConfig;
  /** Tokens in the KV cache. */
  readonly position: number;
  /** Appends tokens to the cache; returns the logits after the last one. */
  prefill(tokens: readonly number[], multimodal?: readonly (RefTokenInput | undefined)[]): Float64Array;
  /** Appends one token; returns the logits for the next position. */
  decode(token: number): Float64Array;
  /** Drops cached positions >= n (0 empties the cache). */
  truncate(n: number): void;
  close(): void;
}

export function referenceForward(modelDir: string, options: ReferenceOptions = {}): ReferenceModel {
  const config = readRefConfig(modelDir);
  if (options.topK !== undefined) config.topK = options.topK;
  return new Reference(config, RefWeights.open(modelDir, config), options);
}

/** The router's module path inside a layer (bailing: mlp.gate.gate_proj). */
function routerPath(c: RefConfig): string {
  return c.arch === 'bailing_moe_linear' ? 'mlp.gate.gate_proj' : 'mlp.gate';
}

/** Greedy decoding: prefill `prompt`, then `steps` argmax tokens; logits[i] precede tokens[i]. */
export function referenceGreedy(model: ReferenceModel, prompt: readonly number[], steps: number) {
  const tokens: number[] = [];
  const logits: Float64Array[] = [];
  let l = model.prefill(prompt);
  for (let i = 0; i < steps; i++) {
    logits.push(l);
    let best = 0;
    for (let v = 1; v < l.length; v++) if (l[v] > l[best]) best = v;
    tokens.push(best);
    if (i + 1 < steps) l = model.decode(best);
  }
  return { tokens, logits };
}

class Reference implements ReferenceModel {
  private keys: Float64Array[][];
  private values: Float64Array[][];
  /** Hybrid models: each linear layer's recurrent state, and its copy after every position
   *  (history[n] = the states after n tokens) so truncate restores it exactly. */
  private linear = new Map<number, LinearState>();
  private history: Map<number, LinearState>[] = [];
  private tokens = 0;
  private readonly heads?: RefPrerouter;
  /** Per layer: experts of the last token (t−1 for the next), and the routing predicted for the next token. */
  private lastExperts: (number[] | undefined)[] = [];
  private predicted: (Route | undefined)[] = [];
  /** Per cached row: the RoPE position after it (its row + 1 for text-only prompts). */
  private nextPos: number[] = [];

  constructor(
    readonly config: RefConfig,
    private readonly w: RefWeights,
    private readonly options: ReferenceOptions,
  ) {
    this.keys = Array.from({ length: config.layers }, () => []);
    this.values = Array.from({ length: config.layers }, () => []);
    const moe = new Set(Array.from({ length: config.layers }, (_, l) => l).filter((l) => !config.denseLayers.has(l)));
    this.resetLinear();
    if (options.prerouter === 'zero-training') this.heads = zeroTrainingPrerouter(w, moe, routerPath(config));
    else if (options.prerouter !== undefined)
      this.heads = filePrerouter(options.prerouter, config.hidden, config.experts);
  }

  get position(): number {
    return this.tokens;
  }

  /** Hybrid and bailing models carry recurrent state per linear layer. */
  private get recurrent(): boolean {
    return this.config.linear !== undefined || this.config.lightning !== undefined;
  }

  private resetLinear(): void {
    for (const l of this.config.linear?.layers ?? []) this.linear.set(l, emptyLinearState(this.config));
    for (const l of this.config.lightning?.layers ?? []) this.linear.set(l, emptyLightningState(this.config));
    this.history = [this.snapshot()];
  }

  private snapshot(): Map<number, LinearState> {
    return new Map([...this.linear].map(([l, st]) => [l, cloneLinearState(st)]));
  }

  prefill(tokens: readonly number[], multimodal: readonly (RefTokenInput | undefined)[] = []): Float64Array {
    if (tokens.length === 0) throw new RangeError('prefill: tokens must not be empty');
    let logits: Float64Array = new Float64Array(0);
    tokens.forEach((t, i) => {
      logits = this.step(t, false, multimodal[i]);
    });
    return logits;
  }

  truncate(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > this.position) {
      throw new RangeError(`truncate: n must be an integer in [0, ${this.position}], got ${n}`);
    }
    for (const c of [...this.keys, ...this.values]) c.length = Math.min(c.length, n);
    this.tokens = n;
    if (this.recurrent) {
      this.history.length = n + 1;
      this.linear = new Map([...this.history[n]!].map(([l, st]) => [l, cloneLinearState(st)]));
    }
    this.nextPos.length = Math.min(this.nextPos.length, n);
    this.lastExperts = [];
    this.predicted = [];
  }

  close(): void {
    this.w.close();
  }

  decode(token: number): Float64Array {
    return this.step(token, true);
  }

  private step(token: number, decode: boolean, mm?: RefTokenInput): Float64Array {
    const c = this.config;
    if (!Number.isInteger(token) || token < 0 || token >= c.vocabSize) {
      throw new RangeError(`token must be an integer in [0, ${c.vocabSize}), got ${token}`);
    }
    const next = this.nextPos[this.position - 1] ?? 0;
    const p3 = mm?.pos3 ?? [next, next, next];
    const pos = c.mrope ? mropeSlots(p3, c.rotaryDims, c.mrope.section, c.mrope.interleaved) : next;
    this.nextPos.push(Math.max(next, Math.max(...p3) + 1));
    const h = mm?.embed ? Float64Array.from(mm.embed) : this.w.matrix(c.embed).row(token);
    const consume = this.predicted;
    this.predicted = [];
    for (let l = 0; l < c.layers; l++) {
      const p = `model.layers.${l}`;
      const xin = rmsNorm(h, this.w.floats(`${p}.input_layernorm.weight`), c.rmsEps);
      const mixer = c.linear?.layers.has(l)
        ? this.linearAttention(l, xin)
        : c.lightning?.layers.has(l)
          ? this.lightningAttention(l, xin, next)
          : this.attention(l, xin, pos);
      axpy(h, 1, mixer);
      const x = rmsNorm(h, this.w.floats(`${p}.post_attention_layernorm.weight`), c.rmsEps);
      axpy(h, 1, c.denseLayers.has(l) ? this.mlp(`${p}.mlp`, x) : this.moe(l, x, decode ? consume[l] : undefined));
      const deep = mm?.deepstack?.[l];
      if (deep) axpy(h, 1, deep);
    }
    this.tokens++;
    if (this.recurrent) this.history.push(this.snapshot());
    const out = rmsNorm(h, this.w.floats('model.norm.weight'), c.rmsEps);
    return matvec(this.w.matrix(c.tied ? c.embed : 'lm_head'), out);
  }

  /** A projection of attention, a dense MLP or the shared experts (bias and LoRA included). */
  private proj(path: string, x: Float64Array): Float64Array {
    const y = matvec(this.w.matrix(path), x);
    if (this.w.has(`${path}.bias`)) axpy(y, 1, this.w.floats(`${path}.bias`));
    const lora = this.options.adapter?.get(path);
    if (lora) addLoraDelta(lora, x, y);
    return y;
  }

  private attention(l: number, x: Float64Array, pos: number | readonly number[]): Float64Array {
    const c = this.config;
    // bailing: one query_key_value [q | k | v], query_/key_layernorm, dense.
    const fused = c.lightning !== undefined;
    const p = `model.layers.${l}.${fused ? 'attention' : 'self_attn'}`;
    const qkv = fused ? this.proj(`${p}.query_key_value`, x) : undefined;
    const [qd, kvd] = [c.heads * c.headDim, c.kvHeads * c.headDim];
    let q = qkv ? qkv.slice(0, qd) : this.proj(`${p}.q_proj`, x);
    // Hybrid models: q_proj gives per head [q | gate]; sigmoid(gate) scales the output.
    let gate: Float64Array | undefined;
    if (c.linear) {
      const hd = c.headDim;
      gate = new Float64Array(c.heads * hd);
      const qs = new Float64Array(c.heads * hd);
      for (let hh = 0; hh < c.heads; hh++) {
        qs.set(q.subarray(2 * hh * hd, (2 * hh + 1) * hd), hh * hd);
        gate.set(q.subarray((2 * hh + 1) * hd, (2 * hh + 2) * hd), hh * hd);
      }
      q = qs;
    }
    const k = qkv ? qkv.slice(qd, qd + kvd) : this.proj(`${p}.k_proj`, x);
    const v = qkv ? qkv.slice(qd + kvd) : this.proj(`${p}.v_proj`, x);
    if (c.qkNorm) {
      rmsNormHeads(q, this.w.floats(`${p}.${fused ? 'query_layernorm' : 'q_norm'}.weight`), c.rmsEps);
      rmsNormHeads(k, this.w.floats(`${p}.${fused ? 'key_layernorm' : 'k_norm'}.weight`), c.rmsEps);
    }
    rope(q, c.headDim, c.rotaryDims, pos, c.ropeTheta, c.ropeInvFreq, c.ropeMscale);
    rope(k, c.headDim, c.rotaryDims, pos, c.ropeTheta, c.ropeInvFreq, c.ropeMscale);
    this.keys[l].push(k);
    this.values[l].push(v);
    const o = attend(q, this.keys[l], this.values[l], c.heads, c.kvHeads, c.headDim);
    if (gate) for (let i = 0; i < o.length; i++) o[i] *= sigmoid(gate[i]);
    return this.proj(`${p}.${fused ? 'dense' : 'o_proj'}`, o);
  }

  private lightningAttention(l: number, x: Float64Array, pos: number): Float64Array {
    const c = this.config;
    const p = `model.layers.${l}.attention`;
    const params = {
      ...(c.qkNorm
        ? { qNorm: this.w.floats(`${p}.query_layernorm.weight`), kNorm: this.w.floats(`${p}.key_layernorm.weight`) }
        : {}),
      gNorm: this.w.floats(`${p}.g_norm.weight`),
      decays: lightningDecays(c.heads, l, c.layers),
    };
    const qkv = this.proj(`${p}.query_key_value`, x);
    const y = lightningStep(c, params, qkv, this.proj(`${p}.g_proj`, x), pos, this.linear.get(l)!);
    return this.proj(`${p}.dense`, y);
  }

  private linearAttention(l: number, x: Float64Array): Float64Array {
    const c = this.config;
    const p = `model.layers.${l}.linear_attn`;
    const inputs: LinearInputs = c.linear!.fused
      ? unfuse(c, this.proj(`${p}.in_proj_qkvz`, x), this.proj(`${p}.in_proj_ba`, x))
      : {
          qkv: this.proj(`${p}.in_proj_qkv`, x),
          z: this.proj(`${p}.in_proj_z`, x),
          b: this.proj(`${p}.in_proj_b`, x),
          a: this.proj(`${p}.in_proj_a`, x),
        };
    const params = {
      conv: this.w.floats(`${p}.conv1d.weight`),
      dtBias: this.w.floats(`${p}.dt_bias`),
      aLog: this.w.floats(`${p}.A_log`),
      norm: this.w.floats(`${p}.norm.weight`),
    };
    return this.proj(`${p}.out_proj`, linearStep(c, params, inputs, this.linear.get(l)!));
  }

  /** down(silu(gate(x)) * up(x)) for a dense MLP or one expert of a stacked one. */
  private mlp(path: string, x: Float64Array, expert?: number): Float64Array {
    const m = (name: string, v: Float64Array): Float64Array =>
      expert === undefined ? this.proj(`${path}.${name}`, v) : matvec(this.w.matrix(`${path}.${name}`, expert), v);
    const g = m('gate_proj', x);
    const u = m('up_proj', x);
    for (let i = 0; i < g.length; i++) g[i] = silu(g[i]) * u[i];
    return m('down_proj', g);
  }

  /** Layer l's routing function applied to router logits (the router's or a head's). */
  private route(l: number, logits: ArrayLike<number>): Route {
    const c = this.config;
    const bias = `model.layers.${l}.mlp.gate.${c.arch === 'glm4_moe' ? 'e_score_correction_bias' : 'expert_bias'}`;
    return c.arch !== 'glm4_moe' && c.arch !== 'bailing_moe_linear'
      ? routeSoftmaxTopK(logits, c.topK, c.normTopK)
      : routeSigmoidGroup(logits, this.w.has(bias) ? this.w.floats(bias) : new Float64Array(c.experts), {
          k: c.topK,
          nGroup: c.nGroup,
          topkGroup: c.topkGroup,
          norm: c.normTopK,
          scaling: c.routedScaling,
        });
  }

  private moe(l: number, x: Float64Array, predicted: Route | undefined): Float64Array {
    const c = this.config;
    const p = `model.layers.${l}.mlp`;
    const route = predicted ?? this.route(l, matvec(this.w.matrix(`model.layers.${l}.${routerPath(c)}`), x));
    this.options.onRoute?.(l, route);
    const next = this.heads?.predict(l, x, route.experts, this.lastExperts[l]);
    if (next) this.predicted[l + 1] = this.route(l + 1, next);
    this.lastExperts[l] = route.experts;
    const out = new Float64Array(c.hidden);
    route.experts.forEach((e, i) => axpy(out, route.weights[i], this.mlp(`${p}.switch_mlp`, x, e)));
    if (c.sharedExperts > 0) axpy(out, 1, this.mlp(`${p}.shared_experts`, x));
    if (c.linear && c.linear.sharedIntermediate > 0) {
      const g = sigmoid(matvec(this.w.matrix(`${p}.shared_expert_gate`), x)[0]!);
      axpy(out, g, this.mlp(`${p}.shared_expert`, x));
    }
    return out;
  }
}
