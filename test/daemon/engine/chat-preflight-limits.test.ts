// The request-wide image limits of the preflight: engine.vision.max_images over all messages (each
// image is encoded before the first token, whatever the context), and the pixels an image's header
// declares against max_input_pixels, both refused before the request queues, naming the part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { preflightChatBody } from '../../../daemon/engine/chat-request.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import type { PreflightLimits } from '../../../daemon/vision/image-input.js';

const png = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#224466' } })
    .png()
    .toBuffer();
const url = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`;
const part = (u: string) => ({ type: 'image_url', image_url: { url: u } });
/** `n` images, two to a user message with a text part first, as a multi-turn request sends them. */
const body = (u: string, n: number) => ({
  messages: Array.from({ length: Math.ceil(n / 2) }, (_, m) => ({
    role: 'user',
    content: [{ type: 'text', text: `turn ${m}` }, ...Array.from({ length: Math.min(2, n - 2 * m) }, () => part(u))],
  })),
});

function refused(b: unknown, limits: PreflightLimits, field: string, rule: string, message: RegExp): void {
  assert.throws(
    () => preflightChatBody(b, limits),
    (e: unknown) => {
      assert.ok(e instanceof RequestError, String(e));
      assert.deepEqual([e.field, e.rule], [field, rule]);
      assert.match(e.message, message);
      return true;
    },
  );
}

test('max_images: exactly the cap passes; one more is refused naming the first part over it', async () => {
  const u = url(await png(8, 8));
  const limits = { maxBytes: 1 << 20, maxImages: 5 };
  preflightChatBody(body(u, 5), limits);
  refused(
    body(u, 6),
    limits,
    'messages[2].content[2].image_url.url',
    'max_images',
    /more than engine\.vision\.max_images 5 images \(this is image 6\)/,
  );
  refused(
    body(u, 40),
    { ...limits, maxImages: 1 },
    'messages[0].content[2].image_url.url',
    'max_images',
    /this is image 2/,
  );
  // Counted before each is checked: the image over the cap is refused as such, whatever it is.
  const tooMany = body(u, 6);
  tooMany.messages[2]!.content[2] = part('https://example.com/x.png');
  refused(tooMany, limits, 'messages[2].content[2].image_url.url', 'max_images', /max_images 5/);
  // Without a cap (a caller that gives none) any number passes.
  preflightChatBody(body(u, 40), { maxBytes: 1 << 20 });
});

test('max_input_pixels: a header at the limit passes, one pixel over is refused before decoding', async () => {
  const u = url(await png(8, 8));
  preflightChatBody(body(u, 1), { maxBytes: 1 << 20, maxInputPixels: 64 });
  refused(
    body(u, 1),
    { maxBytes: 1 << 20, maxInputPixels: 63 },
    'messages[0].content[1].image_url.url',
    'pixels',
    /the image is 8×8 = 64 pixels, more than max_input_pixels 63/,
  );
});
