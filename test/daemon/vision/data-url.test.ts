// Data URLs as mail and some encoders write them: base64 broken into 76-character lines (\r\n) or
// with other ASCII whitespace decodes to the same bytes, the byte limit counts the payload without
// it, and any other character outside base64 is still refused, naming it and the image part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { preflightChatBody } from '../../../daemon/engine/chat-request.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { checkDataUrl, decodeDataUrl, ImageError } from '../../../daemon/vision/image-input.js';

/** `b64` broken into lines of `width` characters joined by `eol`. */
const wrap = (b64: string, width = 76, eol = '\r\n') => b64.match(new RegExp(`.{1,${width}}`, 'g'))!.join(eol);

const noisyPng = async () => {
  // Noise does not compress: a few kB of PNG, so the line breaks add more than the bound's slack.
  const raw = Buffer.alloc(48 * 48 * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919 + (i >> 5) * 104729) & 255;
  return sharp(raw, { raw: { width: 48, height: 48, channels: 3 } })
    .png()
    .toBuffer();
};
const ask = (url: string) => ({
  messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
});

test('base64 broken by CRLF every 76 characters decodes to the same bytes as without', async () => {
  const png = await noisyPng();
  const plain = png.toString('base64');
  const limits = { maxBytes: png.length };
  const want = decodeDataUrl(`data:image/png;base64,${plain}`, limits);
  assert.deepEqual(want.bytes, png);
  for (const payload of [
    wrap(plain),
    `${wrap(plain)}\r\n`,
    wrap(plain, 64, '\n'),
    `\r\n${wrap(plain, 76, ' \t')}`,
    wrap(plain, 4, '\f'),
  ]) {
    const got = checkDataUrl(`data:image/png;base64,${payload}`, limits);
    assert.deepEqual(got.bytes, png, JSON.stringify(payload.slice(0, 90)));
    assert.equal(got.mime, 'image/png');
  }
  // The chat preflight takes it too, with the limit exactly at the image's size.
  assert.ok(plain.length + 2 * Math.ceil(plain.length / 76) > (png.length * 4) / 3 + 4, 'the breaks exceed the slack');
  preflightChatBody(ask(`data:image/png;base64,${wrap(plain)}`), { maxBytes: png.length });
});

test('the byte limit counts the decoded image, not the line breaks', async () => {
  const png = await noisyPng();
  const url = `data:image/png;base64,${wrap(png.toString('base64'))}`;
  assert.equal(checkDataUrl(url, { maxBytes: png.length }).bytes.length, png.length);
  assert.throws(
    () => checkDataUrl(url, { maxBytes: png.length - 1 }),
    (e: unknown) =>
      e instanceof ImageError && e.rule === 'size' && new RegExp(`max_image_bytes ${png.length - 1}`).test(e.message),
  );
});

test('a character outside base64 and whitespace is still refused, naming the part and the character', async () => {
  const png = await noisyPng();
  const lines = wrap(png.toString('base64'));
  const cases: [string, RegExp][] = [
    [`${lines.slice(0, 100)}*${lines.slice(100)}`, /not valid base64: "\*" at payload character 100/],
    [`${lines.slice(0, 10)}\v${lines.slice(10)}`, /not valid base64: "\\u000b" at payload character 10/],
    [`${lines.slice(0, 10)}\u00a0${lines.slice(10)}`, /not valid base64: "\u00a0" at payload character 10/],
    [`AAAA=\r\nAAAA`, /not valid base64: "=" padding before its end/],
  ];
  for (const [payload, message] of cases)
    assert.throws(
      () => preflightChatBody(ask(`data:image/png;base64,${payload}`), { maxBytes: 1 << 20 }),
      (e: unknown) => {
        assert.ok(e instanceof RequestError, String(e));
        assert.deepEqual([e.field, e.rule], ['messages[0].content[0].image_url.url', 'base64']);
        assert.match(e.message, message);
        return true;
      },
    );
});
