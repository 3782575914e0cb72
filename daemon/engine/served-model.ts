// A model ready to serve: its text side (tokenizer, template, stop tokens), its constraint factory
// and a way to open engine sessions. The native loader builds one from a folder and a profile;
// tests may hand the registry another loader.
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { FileAccessError, FileRoots } from '../util/file-roots.js';
import type { ModelSummary, PrefaultStatus } from '../native/binding.js';
import { AdapterManager } from './adapters/adapter-manager.js';
import type { ModelProfile } from './config.js';
import { ConstraintFactory } from './constrained/constraints.js';
import { NativeModel } from './native-model.js';
import { streamLoadOptions } from './stream-config.js';
import { tryAutoStreamFor } from './stream-budget.js';
import type { EngineSession } from './session-pool.js';
import { loadTextModel, type TextModel } from './text-config.js';
import { describeModelFolder } from '../vision/model-folder.js';
import { VisionRuntime } from '../vision/vision-runtime.js';
import { DEFAULT_VISION } from '../vision/config.js';

export interface ServedModel {
  readonly text: TextModel;
  readonly constraints: ConstraintFactory;
  /** Tokens a session holds (prompt + output). */
  readonly contextLength: number;
  /** Engine facts (architecture, sizes, routing width) when the engine reports them. */
  readonly summary?: ModelSummary;
  /** The model's resident LoRA adapters (absent: this model takes none). */
  readonly adapters?: AdapterManager;
  /** The vision tower and image handling (absent: text only). */
  readonly vision?: VisionRuntime;
  /** The weights' background mapping (`prefault`; null when off). */
  prefault?(): PrefaultStatus | null;
  createSession(): Promise<EngineSession>;
  dispose(): void;
}

/** Load stages in order, with the share of the load they end at (for progress notifications). */
export const LOAD_STAGES = [
  { stage: 'prepare', upTo: 0.05 },
  { stage: 'tokenizer', upTo: 0.15 },
  { stage: 'weights', upTo: 0.95 },
  { stage: 'session', upTo: 1 },
] as const;
export type LoadStage = (typeof LOAD_STAGES)[number]['stage'];

export type ModelLoader = (profile: ModelProfile, stage: (s: LoadStage) => void) => Promise<ServedModel>;

/** A model folder that cannot be served (missing, not a folder, tokenizer/weights mismatch). */
export class ModelLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelLoadError';
  }
}

export const loadNativeModel: ModelLoader = async (p, stage) => {
  await checkFolder(p);
  stage('tokenizer');
  const text = await loadTextModel(p.path);
  stage('weights');
  // The auto-size reads the model's geometry: once, for the stream keys and the prefault choice.
  let sized: ReturnType<typeof tryAutoStreamFor> | null = null;
  const auto = () => {
    if (sized === null) sized = tryAutoStreamFor(p.path, p.topK);
    return sized;
  };
  const native = await NativeModel.load(p.path, {
    threads: p.threads > 0 ? p.threads : availableParallelism(),
    ...(p.contextLength > 0 ? { contextLength: p.contextLength } : {}),
    ...(p.topK !== undefined ? { topK: p.topK } : {}),
    ...(p.backend !== undefined ? { backend: p.backend } : {}),
    ...(p.activationBits !== undefined ? { activationBits: p.activationBits } : {}),
    ...(p.stream ? streamLoadOptions(p.stream, auto) : {}),
    ...(p.prefillChunk !== undefined ? { prefillChunk: p.prefillChunk } : {}), // over the auto-size's
    prefault: p.prefault ?? auto()?.resident ?? false,
  });
  const vocab = native.summary.vocabSize;
  if (text.tokenizer.vocabSize > vocab) {
    native.dispose();
    throw new ModelLoadError(
      `tokenizer.json has ${text.tokenizer.vocabSize} tokens but the weights only ${vocab} rows (config.json vocab_size)`,
    );
  }
  let vision: VisionRuntime | undefined;
  if (describeModelFolder(p.path).inputs.includes('image')) {
    try {
      vision = await VisionRuntime.load(p.path, p.vision ?? DEFAULT_VISION, (t) => text.tokenizer.idOf(t));
    } catch (e) {
      native.dispose();
      throw new ModelLoadError(`vision tower: ${(e as Error).message}`);
    }
  }
  stage('session');
  const adapters = new AdapterManager(
    native,
    p.roots && new FileRoots(p.roots.adapters, 'adapter', 'files.adapter_roots'),
  );
  return {
    text,
    constraints: new ConstraintFactory(text.tokenizer, text.stopTokens),
    contextLength: native.summary.contextLength,
    summary: native.summary,
    adapters,
    ...(vision ? { vision } : {}),
    prefault: () => native.prefaultStatus(),
    createSession: () => native.createSession(),
    dispose: () => {
      adapters.clear();
      native.dispose();
      void vision?.dispose();
      void text.tokenizer.close();
    },
  };
};

/** The model folder exists and, with roots, lies inside them with only regular files in it. */
async function checkFolder(p: ModelProfile): Promise<void> {
  try {
    const folder = p.roots
      ? (await new FileRoots(p.roots.models, 'model', 'files.model_roots').entry(p.path)).folder
      : (await stat(p.path)).isDirectory();
    if (!folder) throw new ModelLoadError(`${p.path} is not a folder`);
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === 'ENOENT' || (e as FileAccessError).problem === 'missing';
    if (missing) throw new ModelLoadError(`folder ${p.path} does not exist`);
    if (e instanceof FileAccessError) throw new ModelLoadError(e.message);
    throw e;
  }
}
