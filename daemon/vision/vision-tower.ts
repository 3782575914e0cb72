// A loaded vision tower: one onnxruntime-node session over onnx/vision_encoder*.onnx with its
// preprocessor config. encode() turns patches into image features (and DeepStack features when
// the export has deepstack_features_{j} outputs); one run at a time per session.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { type PreprocessorConfig, readPreprocessorConfig } from './preprocessor-config.js';
import { type ProviderChoice, type ProviderPick, pickProvider, providerFacts } from './execution-provider.js';
import type { Patches } from './preprocess.js';

export interface TowerOptions {
  /** onnxruntime intra-op threads (0: its default). */
  threads?: number;
  provider?: ProviderChoice;
}

export interface ImageFeatures {
  /** [tokens, hidden] rows, one per merged patch. */
  features: Float32Array;
  /** Per DeepStack layer, [tokens, hidden]. */
  deepstack: Float32Array[];
  tokens: number;
}

/** The vision encoder file of a folder: onnx/vision_encoder.onnx (fp32) first, else the first variant. */
export function findVisionEncoder(dir: string): string | undefined {
  const onnx = join(dir, 'onnx');
  if (!existsSync(onnx)) return undefined;
  const names = readdirSync(onnx).filter((n) => /^vision_encoder.*\.onnx$/.test(n));
  const pick = names.includes('vision_encoder.onnx') ? 'vision_encoder.onnx' : names.sort()[0];
  return pick && join(onnx, pick);
}

export class VisionTower {
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(
    private session: InferenceSession | undefined,
    readonly file: string,
    readonly preprocessor: PreprocessorConfig,
    readonly provider: ProviderPick,
    /** The encoder's bytes (weights held by onnxruntime, counted in the model's memory). */
    readonly bytes: number,
    readonly deepstackOutputs: string[],
  ) {}

  static async load(dir: string, o: TowerOptions = {}): Promise<VisionTower> {
    const file = findVisionEncoder(dir);
    if (!file) throw new Error(`${dir}: no onnx/vision_encoder*.onnx`);
    const preprocessor = readPreprocessorConfig(dir);
    const provider = pickProvider(o.provider ?? 'auto', await providerFacts());
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(file, {
      executionProviders: [provider.provider],
      ...(o.threads ? { intraOpNumThreads: o.threads, interOpNumThreads: 1 } : {}),
      graphOptimizationLevel: 'all',
    });
    for (const name of ['pixel_values', 'image_grid_thw']) {
      if (!session.inputNames.includes(name)) {
        await session.release();
        throw new Error(`${file}: the vision encoder has no input ${name} (inputs: ${session.inputNames.join(', ')})`);
      }
    }
    if (!session.outputNames.includes('image_features')) {
      await session.release();
      throw new Error(`${file}: the vision encoder has no output image_features`);
    }
    const deep = session.outputNames
      .filter((n) => /^deepstack_features_\d+$/.test(n))
      .sort((a, b) => rank(a) - rank(b));
    return new VisionTower(session, file, preprocessor, provider, statSync(file).size, deep);
  }

  /** Runs the encoder on the patches of one image. */
  encode(p: Patches): Promise<ImageFeatures> {
    const run = this.chain.then(() => this.run(p));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async run(p: Patches): Promise<ImageFeatures> {
    if (!this.session) throw new Error('the vision tower was unloaded');
    const ort = await import('onnxruntime-node');
    const rows = p.grid[0] * p.grid[1] * p.grid[2];
    const out = await this.session.run({
      pixel_values: new ort.Tensor('float32', p.pixels, [rows, p.pixels.length / rows]),
      image_grid_thw: new ort.Tensor('int64', BigInt64Array.from(p.grid.map(BigInt)), [1, 3]),
    });
    const f = out.image_features;
    const tokens = f.dims[0];
    const merge = this.preprocessor.mergeSize;
    if (tokens * merge * merge !== rows)
      throw new Error(`${this.file}: image_features has ${tokens} rows for ${rows} patches (merge ${merge})`);
    return {
      features: f.data as Float32Array,
      deepstack: this.deepstackOutputs.map((n) => out[n].data as Float32Array),
      tokens,
    };
  }

  async dispose(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    await this.chain;
    await s?.release();
  }
}

const rank = (name: string) => Number(name.slice(name.lastIndexOf('_') + 1));
