// policy.start's reference images are held to engine.vision's limits by the check chat image parts
// get (how many, max_image_bytes, max_input_pixels, base64 with line breaks accepted): one over a
// limit is refused naming context.references[i].image_url, and no episode is started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import sharp from 'sharp';
import { handleMessage } from '../../../../daemon/api/rpc/protocol.js';
import { registerPolicyMethods } from '../../../../daemon/api/rpc/policy.js';
import { RpcRegistry } from '../../../../daemon/api/rpc/registry.js';
import { ConnectionHooks, SubscriptionBudget } from '../../../../daemon/api/rpc/subscriptions.js';
import { DEFAULT_VISION } from '../../../../daemon/vision/config.js';
import type { ImageLimits } from '../../../../daemon/vision/image-input.js';
import { hugeHeaderPng } from '../../../helpers/images.js';
import { stubPolicy } from '../../../helpers/policy-stub.js';
import { parsed, testRpcContext } from '../../../helpers/rpc.js';

const png = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#446688' } })
    .png()
    .toBuffer();
const url = (bytes: Buffer, eol = '') =>
  `data:image/png;base64,${bytes
    .toString('base64')
    .match(/.{1,76}/g)!
    .join(eol)}`;

function setup(limits: Partial<ImageLimits>) {
  const rpc = new RpcRegistry();
  const stub = stubPolicy();
  registerPolicyMethods(rpc, stub.policy, { ...DEFAULT_VISION.limits, ...limits });
  const ctx = testRpcContext(new ConnectionHooks(new SubscriptionBudget(4, 8)), () => true);
  const start = async (references: object[]) =>
    parsed(
      await handleMessage(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'policy.start',
          params: {
            robot: 'arm1',
            instruction: 'stack the blocks',
            provider: { kind: 'scripted', lines: [] },
            context: { references },
          },
        }),
        rpc,
        ctx,
        { log: pino({ level: 'silent' }) },
      ),
    ) as { result?: any; error?: any };
  return { started: stub.started, start };
}

async function refused(
  s: ReturnType<typeof setup>,
  references: object[],
  field: string,
  rule: string,
  message: RegExp,
): Promise<void> {
  const before = s.started.length;
  const r = await s.start(references);
  assert.equal(r.result, undefined, JSON.stringify(r.result));
  assert.equal(r.error.code, -32602);
  assert.deepEqual(r.error.data, { field, rule });
  assert.match(r.error.message, new RegExp(`^Invalid params: ${field.replace(/[[\].]/g, '\\$&')}: `));
  assert.match(r.error.message, message);
  assert.equal(s.started.length, before, 'no episode was started');
}

test('a reference image over max_image_bytes is refused at policy.start; at the limit it starts', async () => {
  const img = await png(16, 16);
  const s = setup({ maxBytes: img.length - 1 });
  await refused(
    s,
    [{ text: 'the goal:' }, { image_url: url(img) }],
    'context.references[1].image_url',
    'size',
    new RegExp(`max_image_bytes ${img.length - 1}`),
  );
  const ok = setup({ maxBytes: img.length });
  const r = await ok.start([{ text: 'the goal:' }, { image_url: url(img, '\r\n'), label: 'goal' }]);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(ok.started.length, 1);
  // Sent as given: the checks decode nothing into the request.
  assert.deepEqual(ok.started[0]!.references![1], { type: 'image', image: { url: url(img, '\r\n') }, label: 'goal' });
});

test('a reference image over max_input_pixels is refused from its header', async () => {
  const s = setup({ maxInputPixels: 16 * 16 - 1 });
  await refused(
    s,
    [{ image_url: url(await png(16, 16)) }],
    'context.references[0].image_url',
    'pixels',
    /16×16 = 256 pixels, more than max_input_pixels 255/,
  );
  await refused(
    setup({}),
    [{ image_url: url(await hugeHeaderPng()) }],
    'context.references[0].image_url',
    'pixels',
    /50000×50000/,
  );
  const ok = setup({ maxInputPixels: 16 * 16 });
  assert.equal((await ok.start([{ image_url: url(await png(16, 16)) }])).error, undefined);
});

test('more reference images than max_images are refused; exactly max_images start', async () => {
  const ref = { image_url: url(await png(4, 4)) };
  const s = setup({ maxImages: 3 });
  await refused(
    s,
    [ref, { text: 'and' }, ref, ref, ref],
    'context.references',
    'max_images',
    /4 images, more than engine\.vision\.max_images 3/,
  );
  assert.equal((await s.start([ref, { text: 'and' }, ref, ref])).error, undefined);
  assert.equal(s.started.length, 1);
});

test('a reference whose base64 has a character outside it is refused naming the reference', async () => {
  const good = url(await png(4, 4), '\r\n');
  await refused(
    setup({}),
    [{ text: 't' }, { image_url: `${good.slice(0, 40)}*${good.slice(40)}` }],
    'context.references[1].image_url',
    'base64',
    /not valid base64: "\*" at payload character 18/,
  );
});
