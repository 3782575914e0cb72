// Header-only image sizes (used to count a prompt's image tokens before decoding) agree with what
// sharp decodes, for every accepted format; garbage gives undefined.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { imageSize } from '../../../daemon/vision/image-size.js';

test('PNG, JPEG (progressive too), GIF and WebP (lossy, lossless, with alpha) sizes from the header', async () => {
  const base = () => sharp({ create: { width: 77, height: 45, channels: 4, background: '#80402080' } });
  const encoded = [
    await base().png().toBuffer(),
    await base().jpeg().toBuffer(),
    await base().jpeg({ progressive: true }).toBuffer(),
    await base().gif().toBuffer(),
    await base().webp().toBuffer(),
    await base().webp({ lossless: true }).toBuffer(),
    await base().removeAlpha().webp().toBuffer(),
  ];
  for (const b of encoded) assert.deepEqual(imageSize(b), { width: 77, height: 45 });
  assert.equal(imageSize(Buffer.from('not an image at all, just text')), undefined);
  assert.equal(imageSize(Buffer.alloc(0)), undefined);
});
