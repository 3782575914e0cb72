// ChatService refuses a bad image part, or one image too many, before the request queues or loads
// its model, with the model's own engine.vision limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import sharp from 'sharp';
import { ChatService } from '../../../daemon/engine/chat-service.js';
import type { ModelProfile } from '../../../daemon/engine/config.js';
import { ModelRegistry } from '../../../daemon/engine/model-registry.js';
import type { ModelLoader } from '../../../daemon/engine/served-model.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { ServingMetrics } from '../../../daemon/engine/serving-metrics.js';
import { DEFAULT_VISION } from '../../../daemon/vision/config.js';

test('a bad image is a 400 before the model loads; the limits are the model profile’s', async (t) => {
  let loads = 0;
  const loader: ModelLoader = async () => {
    loads++;
    throw new Error('no model in this test');
  };
  const profile: ModelProfile = {
    path: '/nonexistent',
    threads: 1,
    contextLength: 4096,
    keepAliveMs: -1,
    queueSize: 4,
    sessions: 1,
    vision: {
      ...DEFAULT_VISION,
      limits: { ...DEFAULT_VISION.limits, maxBytes: 1024, maxImages: 2, maxInputPixels: 255 },
    },
  };
  const metrics = new ServingMetrics(new Registry());
  const registry = new ModelRegistry({ models: { vl: profile }, loader, metrics, log: pino({ level: 'silent' }) });
  await registry.start();
  t.after(() => registry.stop());
  const chat = new ChatService(registry, metrics);
  const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#102030' } })
    .png()
    .toBuffer();
  const jpeg = await sharp(png).jpeg().toBuffer();
  const ask = (...urls: string[]) =>
    chat.run({
      body: {
        model: 'vl',
        messages: [{ role: 'user', content: urls.map((url) => ({ type: 'image_url', image_url: { url } })) }],
      },
    });
  const small = await sharp(png).resize(15, 17).png().toBuffer();
  const cases: [string[], number, RegExp][] = [
    [[`data:image/png;base64,${jpeg.toString('base64')}`], 0, /declared image\/png but the bytes are jpeg/],
    [
      [`data:image/png;base64,${Buffer.concat([png, Buffer.alloc(2000)]).toString('base64')}`],
      0,
      /max_image_bytes 1024/,
    ],
    [[`data:image/png;base64,${png.toString('base64')}`], 0, /16×16 = 256 pixels, more than max_input_pixels 255/],
    [Array(3).fill(`data:image/png;base64,${small.toString('base64')}`), 2, /engine\.vision\.max_images 2 images/],
  ];
  for (const [urls, k, message] of cases)
    await assert.rejects(ask(...urls).next(), (e: unknown) => {
      assert.ok(e instanceof RequestError, String(e));
      assert.equal(e.field, `messages[0].content[${k}].image_url.url`);
      assert.match(e.message, message);
      return true;
    });
  assert.equal(loads, 0, 'the model was never loaded');
});
