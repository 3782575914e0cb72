// `brainstem bench vision`: per image size, the preprocessing time, the tower's encode time, the
// image tokens and the prefill speed of a prompt spliced with them (native engine), on a
// synthetic gradient image. Timing only: nothing here is asserted by tests.
import sharp from 'sharp';
import { NativeModel } from '../engine/native-model.js';
import { loadTextModel } from '../engine/text-config.js';
import { prepareImage } from '../vision/image-input.js';
import { sliceImages, splicePrompt } from '../vision/splice.js';
import { VisionRuntime } from '../vision/vision-runtime.js';

export interface VisionBenchOptions {
  model: string;
  sizes: [number, number][];
  threads: number;
  towerThreads: number;
}

export interface VisionBenchRow {
  width: number;
  height: number;
  resized: [number, number];
  image_tokens: number;
  preprocess_ms: number;
  encode_ms: number;
  prompt_tokens: number;
  prefill_ms: number;
  prefill_tokens_per_second: number;
}

async function gradient(width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      raw.set([(x * 255) / width, (y * 255) / height, (x ^ y) & 255], (y * width + x) * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

export async function runVisionBench(o: VisionBenchOptions) {
  const text = await loadTextModel(o.model);
  const limits = { maxPixels: 0, maxInputPixels: 1 << 30, maxBytes: 1 << 30, maxImages: 1024 };
  const vision = await VisionRuntime.load(
    o.model,
    { threads: o.towerThreads, provider: 'auto', limits, cacheImages: 0 },
    (t) => text.tokenizer.idOf(t),
  );
  const model = await NativeModel.load(o.model, { threads: o.threads });
  const rows: VisionBenchRow[] = [];
  try {
    for (const [width, height] of o.sizes) {
      const png = await gradient(width, height);
      const t0 = performance.now();
      const img = await prepareImage(png, vision.tower.preprocessor, limits, 'image/png');
      const t1 = performance.now();
      const f = await vision.tower.encode(img);
      const t2 = performance.now();
      const ask = text.tokenizer.encode('Describe the picture.');
      const rendered = [vision.ids.start, vision.ids.image, vision.ids.end, ...ask];
      const encoded = { ...f, hash: 'bench', grid: img.grid, preprocessMs: 0, encodeMs: 0, cached: false };
      const { prompt, images } = splicePrompt(rendered, [encoded], vision.ids, vision.tower.preprocessor.mergeSize);
      const session = await model.createSession({ contextLength: prompt.length + 8 });
      const t3 = performance.now();
      await session.prefill(prompt, sliceImages(images, 0, prompt.length));
      const prefillMs = performance.now() - t3;
      session.dispose();
      rows.push({
        width,
        height,
        resized: [img.resized[1], img.resized[0]],
        image_tokens: f.tokens,
        preprocess_ms: t1 - t0,
        encode_ms: t2 - t1,
        prompt_tokens: prompt.length,
        prefill_ms: prefillMs,
        prefill_tokens_per_second: (prompt.length * 1000) / prefillMs,
      });
    }
  } finally {
    model.dispose();
    await vision.dispose();
  }
  return {
    model: o.model,
    arch: model.summary.arch,
    provider: vision.tower.provider.provider,
    deepstack_layers: vision.tower.deepstackOutputs.length,
    threads: o.threads,
    tower_threads: o.towerThreads,
    sizes: rows,
  };
}
