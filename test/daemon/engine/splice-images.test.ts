// spliceImages before the tower: the prompt's size from the images' headers is checked against the
// context before any image is encoded, and an aborted request stops between images.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spliceImages } from '../../../daemon/engine/chat-service.js';
import { CancelledError } from '../../../daemon/engine/request-queue.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import type { RequestImage, VisionRuntime } from '../../../daemon/vision/vision-runtime.js';

const IMAGE = 7;

/** A stand-in tower: every image is `tokens` tokens; `onEncode` runs at each encode. */
function fakeVision(tokens: number, onEncode: () => void): VisionRuntime {
  return {
    ids: { image: IMAGE, start: 5, end: 6 },
    tower: { preprocessor: { mergeSize: 2 } },
    tokensFor: () => tokens,
    encode: async (img: RequestImage) => {
      onEncode();
      const hidden = 2;
      return {
        features: new Float32Array(tokens * hidden),
        deepstack: [],
        tokens,
        hash: String(img.bytes[0]),
        grid: [1, 2, 2 * tokens],
      };
    },
  } as unknown as VisionRuntime;
}

const images = (n: number): RequestImage[] =>
  Array.from({ length: n }, (_, i) => ({
    bytes: Buffer.from([i]),
    mime: 'image/png',
    at: `messages[0].content[${i}]`,
  }));
const prompt = (n: number) => [1, 2, ...Array.from({ length: n }, () => IMAGE), 3];

test('a prompt whose images cannot fit the context is refused before any image is encoded', async () => {
  let encoded = 0;
  const vision = fakeVision(100, () => encoded++);
  // 3 text tokens + 10 images × 100 tokens = 1003 ≥ 1000.
  await assert.rejects(spliceImages(vision, prompt(10), images(10), { contextLength: 1000 }), (e: unknown) => {
    assert.ok(e instanceof RequestError);
    assert.match(e.message, /the prompt has 1003 tokens; the context holds 1000/);
    return true;
  });
  assert.equal(encoded, 0);
  const ok = await spliceImages(vision, prompt(10), images(10), { contextLength: 1004 });
  assert.equal(ok.prompt.length, 1003);
  assert.equal(encoded, 10);
});

test('an abort stops the encoding between images', async () => {
  const ac = new AbortController();
  let encoded = 0;
  const vision = fakeVision(4, () => {
    if (++encoded === 2) ac.abort();
  });
  await assert.rejects(
    spliceImages(vision, prompt(5), images(5), { contextLength: 1000, signal: ac.signal }),
    CancelledError,
  );
  assert.equal(encoded, 2);
});
