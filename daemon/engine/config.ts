// The `engine` and `models` config sections: serving defaults, and models by name → folder plus
// a profile (threads, context, routing width K). A model's profile keys override the engine's.
// Expert streaming adds its keys (daemon/engine/stream-config.ts) to both.
import { parseDuration } from '../util/duration.js';
import type { ActivationBits } from '../native/binding.js';
import {
  bool,
  int,
  list,
  obj,
  oneOf,
  optional,
  record,
  str,
  type Infer,
  type Node,
} from '../../robot/common/validation/builders.js';
import type { Issue } from '../../robot/common/validation/issue.js';
import { ADAPTER_NAME } from './adapters/adapter-manager.js';
import { ADAPTER_FORMATS, type AdapterFormat } from './adapters/plan.js';
import type { VisionOptions } from '../vision/vision-runtime.js';
import { visionOptions, visionSchema } from '../vision/config.js';
import { resolveStream, streamEngineFields, streamModelFields, type StreamProfile } from './stream-config.js';

/** A keep-alive: seconds or a "5m"-style string, kept as written (so a printed config reads back
 *  the same); durationMs converts a checked value. */
export function duration(o: { default?: string; doc?: string } = {}): Node<string | number> {
  const type = 'duration ("30s", "5m", "1h"; seconds as a number; 0 = now; negative = never)';
  return {
    info: { kind: 'string', type, doc: o.doc, default: o.default },
    check(value: unknown, path: string, issues: Issue[]) {
      const v = value === undefined ? o.default : value;
      if (v === undefined) {
        issues.push({ path, rule: `is required (${type})`, value });
        return undefined;
      }
      const d = parseDuration(v);
      if ('rule' in d) {
        issues.push({ path, rule: d.rule, value });
        return undefined;
      }
      return v as string | number;
    },
  };
}

/** Milliseconds of a duration the schema accepted (-1 = never). */
export function durationMs(v: string | number): number {
  const d = parseDuration(v);
  if ('rule' in d) throw new RangeError(`${JSON.stringify(v)}: ${d.rule}`);
  return d.ms;
}

// Ranges shared by the engine defaults and the per-model overrides.
const THREADS = { min: 0, max: 256 };
const CONTEXT = { min: 0, max: 1 << 24 };
const QUEUE = { min: 0, max: 10_000 };
const SESSIONS = { min: 1, max: 64 };

export const engineSchema = obj(
  {
    keep_alive: duration({
      default: '5m',
      doc: 'how long a model stays loaded after its last request: seconds (300) or a duration (90s, 5m, 1h30m, 250ms); 0 = unload right after each request, negative = never',
    }),
    queue_size: int({
      ...QUEUE,
      default: 8,
      doc: 'requests that may wait per model while one runs (turns go round-robin between clients, FIFO within one); one more is refused as busy (HTTP 429)',
    }),
    queue_per_client: int({
      ...QUEUE,
      default: 2,
      doc: "a client's share of those (an HTTP or WebSocket connection, a policy episode): a client may go past it while there is room, but once the queue is full a client under its share takes the place of the newest request of the client furthest over it (refused as busy, HTTP 429); at or above queue_size it has no effect",
    }),
    threads: int({ ...THREADS, default: 0, doc: 'CPU threads per model for the kernels (0 = one per core)' }),
    context_length: int({
      ...CONTEXT,
      default: 0,
      doc: "tokens per session, prompt + output (0 = the model's max_position_embeddings)",
    }),
    sessions: int({ ...SESSIONS, default: 4, doc: 'KV-cache sessions kept per model for prompt-prefix reuse' }),
    demo_model: bool({
      default: true,
      doc: 'with no models configured, serve a tiny random-weight model named demo (generated once under <data_dir>/models)',
    }),
    ...streamEngineFields,
    vision: visionSchema,
  },
  { doc: 'Serving defaults every model starts from (models.<name> overrides them per model)' },
);

/** A model: its folder and its profile; unset profile keys fall back to `engine`. */
export const modelFields = {
  path: str({
    nonEmpty: true,
    doc: 'model folder (config.json, *.safetensors, tokenizer.json, tokenizer_config.json); "~" = home, relative = from the working directory; checked when the model loads (a missing folder fails that model only)',
  }),
  threads: optional(int({ ...THREADS, doc: 'CPU threads for this model' })),
  context_length: optional(int({ ...CONTEXT, doc: 'tokens per session' })),
  top_k: optional(
    int({
      min: 1,
      max: 1024,
      doc: "routing width K: experts per token (default: the model's num_experts_per_tok; at most the experts a token may reach, checked at load)",
    }),
  ),
  backend: optional(
    str({
      nonEmpty: true,
      doc: 'kernel set: "auto" (default: "cuda" when a CUDA device of capability 7.2 or more passes the set\'s smoke test at load, else the fastest usable CPU set; the reason is logged) or a name, e.g. "cpu-avx2", "cpu-ref", "cuda", "metal" (`brainstem doctor` and system.info list them)',
    }),
  ),
  activation_bits: optional(
    oneOf([8, 16, 24] as const, {
      doc: 'activation precision of the integer decode kernels: 16 (default; logits ~1e-4 of their scale off the reference), 24 (~1e-6, ~10% slower decode on x86) or 8 (one byte per activation as in a Q8 dot product, ~1e-2 off; half the dot-product work: prefill ~2x faster on AVX-512 VNNI and ~1.4x on AVX2, decode faster only where compute rather than memory bandwidth limits it); 8-bit weights take the float kernels at 24 (and on AVX2 at 16)',
    }),
  ),
  prefill_chunk: optional(
    int({
      min: 1,
      max: 4096,
      doc: 'tokens per forward step of a prefill (default auto-sized: 512, or 128 where experts stream and two layers do not fit; whole-layer prefill reads every expert once per chunk): longer chunks give each routed expert longer runs for the prefill GEMM (faster prompts) at scratch memory proportional to the chunk',
    }),
  ),
  prefault: optional(
    bool({
      doc: 'map every weight page into the daemon on a background thread from load on (idle CPU time only), reading what the page cache lacks, then checking every routed expert for NaN/Inf weights, so requests stop taking page faults and first-use checks (llama.cpp maps with MAP_POPULATE; models.status shows memory.weights_mapped): default true where the weights fit the memory budget (resident), false where experts stream from disk',
    }),
  ),
  keep_alive: optional(duration({ doc: 'keep-alive of this model' })),
  queue_size: optional(int({ ...QUEUE, doc: 'waiting requests for this model' })),
  queue_per_client: optional(int({ ...QUEUE, doc: 'waiting requests per client for this model' })),
  sessions: optional(int({ ...SESSIONS, doc: 'KV-cache sessions for this model' })),
  ...streamModelFields,
  adapters: optional(
    record(
      obj({
        path: str({
          nonEmpty: true,
          doc: 'adapter folder or file (PEFT, mlx-lm or Edge0); "~" = home, relative = from the working directory',
        }),
        format: optional(oneOf(ADAPTER_FORMATS, { doc: 'force a format instead of detecting it' })),
      }),
      {
        doc: 'LoRA adapters loaded with the model, by name (1-64 letters, digits, "_", ".", "-"); a bad adapter fails the model\'s load naming it; more load at run time (adapters.load)',
        keyRule: (k) =>
          ADAPTER_NAME.test(k) ? undefined : 'must be an adapter name of 1-64 letters, digits, "_", "." or "-"',
      },
    ),
  ),
};

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export const modelsSchema = record(obj(modelFields), {
  doc: 'Models by name (set in files only: no environment variables) → folder and profile',
  keyRule: (k) =>
    NAME.test(k)
      ? undefined
      : 'must be a model name of letters, digits, "_", "." or "-" (":" separates an adapter in requests)',
});

export const filesSchema = obj(
  {
    model_roots: list(str({ nonEmpty: true }), {
      doc: 'folders model files may be read from, besides <data_dir>/models and each models.<name>.path itself; a model folder\'s files, symlinks resolved, must lie inside one (a models.<name>.path that is a Hugging Face cache snapshot, models--org--name/snapshots/<rev>, also admits the blobs/ folder of that repo, where its files link to); "~" = home, relative = from the working directory',
    }),
    adapter_roots: list(str({ nonEmpty: true }), {
      doc: 'folders adapters.load may read LoRA adapters from, besides <data_dir>/adapters and each configured models.<name>.adapters path; symlinks resolved must stay inside; "~" = home, relative = from the working directory',
    }),
  },
  {
    doc: 'Where model and adapter files may be read from: only regular files and folders inside these roots (no FIFOs, devices or sockets), symlinks resolved',
  },
);

export type EngineConfig = Infer<typeof engineSchema>;
export type FilesConfig = Infer<typeof filesSchema>;
export type ModelConfig = Infer<typeof modelsSchema>[string];

/** A model's effective profile: its own keys over the engine's defaults. */
export interface ModelProfile {
  path: string;
  threads: number;
  contextLength: number;
  topK?: number;
  backend?: string;
  activationBits?: ActivationBits;
  prefillChunk?: number;
  /** Map the weights at load (absent: where they stay resident). */
  prefault?: boolean;
  keepAliveMs: number;
  queueSize: number;
  /** Waiting requests one client may hold (absent: queueSize, no limit per client). */
  queuePerClient?: number;
  sessions: number;
  /** Expert streaming: paths per phase, slots, hot cache, I/O, prerouter (absent: the engine's plain exact path). */
  stream?: StreamProfile;
  /** LoRA adapters loaded with the model, by name (paths resolved). */
  adapters?: Record<string, AdapterSource>;
  /** Folders the model's files and its adapters may be read from (absent: anywhere). */
  roots?: FileRootsConfig;
  /** Vision tower settings (used when the folder has one). */
  vision?: VisionOptions;
}

/** Resolved roots (absolute paths), built-in ones included. */
export interface FileRootsConfig {
  models: string[];
  adapters: string[];
}

export interface AdapterSource {
  path: string;
  format?: AdapterFormat;
}

/** `resolvePath` resolves adapter paths as `path` was resolved (home, working directory). */
export function resolveProfile(
  m: Partial<ModelConfig>,
  e: EngineConfig,
  path: string,
  resolvePath: (p: string) => string = (p) => p,
): ModelProfile {
  return {
    path,
    threads: m.threads ?? e.threads,
    contextLength: m.context_length ?? e.context_length,
    topK: m.top_k,
    backend: m.backend,
    ...(m.activation_bits !== undefined ? { activationBits: m.activation_bits } : {}),
    ...(m.prefill_chunk !== undefined ? { prefillChunk: m.prefill_chunk } : {}),
    ...(m.prefault !== undefined ? { prefault: m.prefault } : {}),
    keepAliveMs: durationMs(m.keep_alive ?? e.keep_alive),
    queueSize: m.queue_size ?? e.queue_size,
    queuePerClient: m.queue_per_client ?? e.queue_per_client,
    sessions: m.sessions ?? e.sessions,
    stream: resolveStream(m, e),
    vision: visionOptions(e.vision),
    adapters: Object.fromEntries(
      Object.entries(m.adapters ?? {}).map(([name, a]) => [
        name,
        { path: resolvePath(a.path), ...(a.format ? { format: a.format } : {}) },
      ]),
    ),
  };
}
