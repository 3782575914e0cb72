// Splices encoded images into a rendered prompt: each image's single <|image_pad|> becomes one
// pad per merged patch, the pads' rows take the image features, and every token gets its
// (time, height, width) RoPE position (Qwen-VL's rope index: text counts up; an image block at
// base b puts token (t, row, col) of its merged grid at (b + t, b + row, b + col); text resumes
// after the block's largest position). Cache keys name image rows by content hash.
import type { MultimodalPrefill } from '../native/binding.js';
import { RequestError } from '../engine/request-error.js';
import type { EncodedImage, VisionIds } from './vision-runtime.js';

export interface PromptImages {
  /** Per prompt token: its identity in the prefix cache (the id for text, "<hash>:<k>" for image rows). */
  keys: (number | string)[];
  /** Prompt indices of the image rows, ascending. */
  rows: Int32Array;
  /** [rows, hidden]. */
  embeds: Float32Array;
  /** Per DeepStack layer, [rows, hidden]. */
  deepstack: Float32Array[];
  /** [3 × prompt length]: time, height, width positions. */
  positions: Int32Array;
  hidden: number;
}

export function splicePrompt(
  tokens: readonly number[],
  images: readonly EncodedImage[],
  ids: VisionIds,
  merge: number,
): { prompt: number[]; images: PromptImages } {
  const pads = tokens.reduce((n, t) => n + (t === ids.image ? 1 : 0), 0);
  if (pads !== images.length)
    throw new RequestError(
      'messages',
      'placeholders',
      `the prompt holds ${pads} image placeholder token(s) for ${images.length} image(s); message text must not contain vision tokens such as <|image_pad|>`,
    );
  const total = tokens.length + images.reduce((n, im) => n + im.tokens - 1, 0);
  const hidden = images.length > 0 ? images[0]!.features.length / images[0]!.tokens : 0;
  const nDeep = images.length > 0 ? Math.min(...images.map((im) => im.deepstack.length)) : 0;
  const rowsTotal = images.reduce((n, im) => n + im.tokens, 0);
  const prompt: number[] = [];
  const keys: (number | string)[] = [];
  const rows = new Int32Array(rowsTotal);
  const embeds = new Float32Array(rowsTotal * hidden);
  const deepstack = Array.from({ length: nDeep }, () => new Float32Array(rowsTotal * hidden));
  const positions = new Int32Array(3 * total);
  let next = 0;
  let r = 0;
  let k = 0;
  for (const t of tokens) {
    if (t !== ids.image) {
      positions[prompt.length] = positions[total + prompt.length] = positions[2 * total + prompt.length] = next++;
      keys.push(t);
      prompt.push(t);
      continue;
    }
    const im = images[k++]!;
    const [gt, gh, gw] = [im.grid[0], im.grid[1] / merge, im.grid[2] / merge];
    embeds.set(im.features, r * hidden);
    for (let j = 0; j < nDeep; j++) deepstack[j]!.set(im.deepstack[j]!, r * hidden);
    for (let i = 0; i < im.tokens; i++, r++) {
      const at = prompt.length;
      positions[at] = next + Math.floor(i / (gh * gw));
      positions[total + at] = next + (Math.floor(i / gw) % gh);
      positions[2 * total + at] = next + (i % gw);
      rows[r] = at;
      keys.push(`${im.hash}:${i}`);
      prompt.push(ids.image);
    }
    next += Math.max(gt, gh, gw);
  }
  return { prompt, images: { keys, rows, embeds, deepstack, positions, hidden } };
}

/** The part of the spliced prompt in [at, end), as one native prefill's multimodal argument. */
export function sliceImages(p: PromptImages, at: number, end: number): MultimodalPrefill {
  const total = p.positions.length / 3;
  let r0 = 0;
  while (r0 < p.rows.length && p.rows[r0]! < at) r0++;
  let r1 = r0;
  while (r1 < p.rows.length && p.rows[r1]! < end) r1++;
  const rows = p.rows.slice(r0, r1).map((x) => x - at);
  const part = (a: Float32Array) => a.subarray(r0 * p.hidden, r1 * p.hidden);
  const deep = new Float32Array(p.deepstack.length * (r1 - r0) * p.hidden);
  p.deepstack.forEach((d, j) => deep.set(part(d), j * (r1 - r0) * p.hidden));
  const positions = new Int32Array(3 * (end - at));
  for (let a = 0; a < 3; a++) positions.set(p.positions.subarray(a * total + at, a * total + end), a * (end - at));
  return {
    embeds: part(p.embeds).slice(),
    rows,
    ...(deep.length > 0 ? { deepstack: deep } : {}),
    positions,
  };
}
