// Image parts are checked before a request queues or loads a model: the data URL, base64, the byte
// limit and the declared MIME against the bytes' signature, each a RequestError naming the part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { preflightChatBody } from '../../../daemon/engine/chat-request.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { imageFormat } from '../../../daemon/vision/image-size.js';

const LIMITS = { maxBytes: 4096 };
const body = (url: string) => ({
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
});
const solid = (format: 'png' | 'jpeg' | 'webp' | 'gif', side = 8) =>
  sharp({ create: { width: side, height: side, channels: 3, background: '#336699' } })
    .toFormat(format)
    .toBuffer();
const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;

test('bad image parts are refused by the preflight, naming the part, the rule and the value', async () => {
  const png = await solid('png');
  const jpeg = await solid('jpeg');
  const big = Buffer.concat([png, Buffer.alloc(5000)]);
  const cases: [string, string, RegExp][] = [
    ['https://example.com/cat.png', 'scheme', /does not fetch/],
    ['data:image/png;base64,@@@@', 'base64', /not valid base64/],
    [dataUrl('application/pdf', png), 'mime', /application\/pdf is not an image type/],
    [dataUrl('image/png', jpeg), 'mime', /declared image\/png but the bytes are jpeg/],
    [dataUrl('image/gif', Buffer.from('not an image at all')), 'mime', /bytes are not a png, jpeg, webp or gif image/],
    [dataUrl('image/png', big), 'size', /larger than max_image_bytes 4096/],
  ];
  for (const [url, rule, message] of cases)
    assert.throws(
      () => preflightChatBody(body(url), LIMITS),
      (e: unknown) => {
        assert.ok(e instanceof RequestError, String(e));
        assert.deepEqual([e.field, e.rule], ['messages[0].content[1].image_url.url', rule], url.slice(0, 40));
        assert.match(e.message, message);
        return true;
      },
    );
});

test('good images of every accepted type pass the preflight; signatures name their format', async () => {
  for (const format of ['png', 'jpeg', 'webp', 'gif'] as const) {
    const bytes = await solid(format);
    assert.equal(imageFormat(bytes), format);
    preflightChatBody(body(dataUrl(`image/${format}`, bytes)), LIMITS);
  }
  preflightChatBody(body(dataUrl('image/jpg', await solid('jpeg'))), LIMITS);
  assert.equal(imageFormat(new Uint8Array(3)), undefined);
});
