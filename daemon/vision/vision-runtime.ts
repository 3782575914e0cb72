// A served model's vision side: its tower, the image limits, the vision token ids, and a small
// cache of encoded images by content hash, so a repeated image is neither preprocessed nor
// re-encoded (its prefill is reused by the prefix cache, whose keys carry the same hash).
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { RequestError } from '../engine/request-error.js';
import { MODEL_TEXT_MAX_BYTES } from '../engine/tokenizer.js';
import { readRegularTextSync } from '../util/file-roots.js';
import type { ImageSink } from '../engine/chat-template.js';
import {
  checkDataUrl,
  ImageError,
  type ImageLimits,
  imageHeader,
  type PreflightLimits,
  prepareImage,
} from './image-input.js';
import { imageSize } from './image-size.js';
import { cappedConfig, smartResize } from './preprocess.js';
import { type ImageFeatures, type TowerOptions, VisionTower } from './vision-tower.js';

/** An image of a request, decoded from its data URL (not yet preprocessed). */
export interface RequestImage {
  bytes: Buffer;
  mime: string;
  /** Where it came from in the request, for messages. */
  at: string;
}

/** An image part's data URL, checked as far as no model is needed; bad → RequestError naming `at`. */
export function requestImage(url: unknown, at: string, limits: PreflightLimits): RequestImage {
  try {
    return { ...checkDataUrl(url, limits), at };
  } catch (e) {
    if (e instanceof ImageError) throw new RequestError(at, e.rule, e.message);
    throw e;
  }
}

export interface EncodedImage extends ImageFeatures {
  /** sha256 of the encoded bytes: the image's identity in the prefix cache. */
  hash: string;
  grid: [number, number, number];
  preprocessMs: number;
  encodeMs: number;
  cached: boolean;
}

export interface VisionIds {
  image: number;
  start: number;
  end: number;
}

export interface VisionOptions extends TowerOptions {
  limits: ImageLimits;
  /** Encoded images kept by hash (0: none). */
  cacheImages: number;
}

export class VisionRuntime {
  readonly stats = { encoded: 0, cacheHits: 0 };
  private readonly cache = new Map<string, EncodedImage>();

  private constructor(
    readonly tower: VisionTower,
    readonly ids: VisionIds,
    private readonly o: VisionOptions,
    private readonly clock: () => number,
  ) {}

  /** The text one image stands for in a message, as Qwen-VL chat templates write it. */
  static readonly PLACEHOLDER = '<|vision_start|><|image_pad|><|vision_end|>';

  /** `idOf` (the tokenizer's) must map the placeholder's tokens to config.json's ids. */
  static async load(
    dir: string,
    o: VisionOptions,
    idOf: (token: string) => number | undefined,
    clock = () => performance.now(),
  ): Promise<VisionRuntime> {
    const config = JSON.parse(readRegularTextSync(join(dir, 'config.json'), MODEL_TEXT_MAX_BYTES)) as Record<
      string,
      unknown
    >;
    const id = (key: string): number => {
      const v = config[key];
      if (!Number.isInteger(v))
        throw new Error(`${dir}/config.json: ${key} must be a token id, got ${JSON.stringify(v)}`);
      return v as number;
    };
    const ids = { image: id('image_token_id'), start: id('vision_start_token_id'), end: id('vision_end_token_id') };
    for (const [token, want] of [
      ['<|image_pad|>', ids.image],
      ['<|vision_start|>', ids.start],
      ['<|vision_end|>', ids.end],
    ] as const) {
      if (idOf(token) !== want)
        throw new Error(`${dir}: the tokenizer's ${token} is ${idOf(token)} but config.json says ${want}`);
    }
    const tower = await VisionTower.load(dir, o);
    return new VisionRuntime(tower, ids, o, clock);
  }

  /** The image sink for one request: checks each data URL now (400 before any work). */
  sink(into: RequestImage[]): ImageSink {
    return {
      placeholder: VisionRuntime.PLACEHOLDER,
      add: (url, at) => into.push(requestImage(url, at, this.o.limits)),
    };
  }

  /** Image tokens this image will take, from its header (1 when the header is not understood:
   *  it then counts as its one placeholder). */
  tokensFor(img: RequestImage): number {
    const size = imageSize(img.bytes);
    const p = this.tower.preprocessor;
    if (!size || size.width < 1 || size.height < 1) return 1;
    try {
      const [h, w] = smartResize(size.height, size.width, cappedConfig(p, this.o.limits.maxPixels));
      return ((h / p.patchSize) * (w / p.patchSize)) / (p.mergeSize * p.mergeSize);
    } catch {
      return 1;
    }
  }

  /** Preprocesses and encodes one image, or returns it from the cache. Bad images → RequestError. */
  async encode(img: RequestImage): Promise<EncodedImage> {
    const hash = createHash('sha256').update(img.bytes).digest('hex');
    const hit = this.cache.get(hash);
    if (hit) {
      // The same bytes passed every check before; only the declared type can differ now.
      if (img.mime) {
        try {
          await imageHeader(img.bytes, img.mime);
        } catch (e) {
          throw requestError(img, e);
        }
      }
      this.stats.cacheHits++;
      this.cache.delete(hash);
      this.cache.set(hash, hit);
      return { ...hit, cached: true, preprocessMs: 0, encodeMs: 0 };
    }
    const t0 = this.clock();
    let prepared;
    try {
      prepared = await prepareImage(img.bytes, this.tower.preprocessor, this.o.limits, img.mime);
    } catch (e) {
      throw requestError(img, e);
    }
    const t1 = this.clock();
    const features = await this.tower.encode(prepared);
    const out: EncodedImage = {
      ...features,
      hash,
      grid: prepared.grid,
      preprocessMs: t1 - t0,
      encodeMs: this.clock() - t1,
      cached: false,
    };
    this.stats.encoded++;
    if (this.o.cacheImages > 0) {
      this.cache.set(hash, out);
      while (this.cache.size > this.o.cacheImages) this.cache.delete(this.cache.keys().next().value!);
    }
    return out;
  }

  /** Bytes the tower and the cached features hold. */
  bytes(): number {
    let n = this.tower.bytes;
    for (const e of this.cache.values()) n += e.features.byteLength + e.deepstack.reduce((a, d) => a + d.byteLength, 0);
    return n;
  }

  async dispose(): Promise<void> {
    this.cache.clear();
    await this.tower.dispose();
  }
}

/** An image refusal as the request error naming the image's place; anything else unchanged. */
function requestError(img: RequestImage, e: unknown): unknown {
  return e instanceof ImageError ? new RequestError(img.at, e.rule, e.message) : e;
}
