// An encoded image's pixel size read from its header alone (synchronously, no decoding), for
// counting a prompt's image tokens before the images are preprocessed: PNG IHDR, JPEG SOFn,
// GIF logical screen, WebP VP8 / VP8L / VP8X. undefined when the header is not understood. And the
// format from the signature, so a request's declared MIME is checked before it queues.
export function imageSize(b: Uint8Array): { width: number; height: number } | undefined {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (buf.length >= 24 && buf.readUInt32BE(0) === 0x89504e47 && buf.toString('latin1', 12, 16) === 'IHDR')
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  if (buf.length >= 10 && buf.toString('latin1', 0, 3) === 'GIF')
    return { width: buf.readUInt16LE(6), height: buf.readUInt16LE(8) };
  if (buf.length >= 30 && buf.toString('latin1', 0, 4) === 'RIFF' && buf.toString('latin1', 8, 12) === 'WEBP') {
    const kind = buf.toString('latin1', 12, 16);
    if (kind === 'VP8 ') return { width: buf.readUInt16LE(26) & 0x3fff, height: buf.readUInt16LE(28) & 0x3fff };
    if (kind === 'VP8L') {
      const v = buf.readUInt32LE(21);
      return { width: (v & 0x3fff) + 1, height: ((v >>> 14) & 0x3fff) + 1 };
    }
    if (kind === 'VP8X') return { width: buf.readUIntLE(24, 3) + 1, height: buf.readUIntLE(27, 3) + 1 };
    return undefined;
  }
  if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) return undefined;
  // JPEG: walk the marker segments to the first start-of-frame (C0–CF except C4, C8, CC).
  let at = 2;
  while (at + 9 < buf.length) {
    if (buf[at] !== 0xff) return undefined;
    const marker = buf[at + 1]!;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { width: buf.readUInt16BE(at + 7), height: buf.readUInt16BE(at + 5) };
    at += 2 + buf.readUInt16BE(at + 2);
  }
  return undefined;
}

/** The format an encoded image's signature names (sharp's names), without decoding. */
export function imageFormat(b: Uint8Array): 'png' | 'jpeg' | 'gif' | 'webp' | undefined {
  const sig = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1', 0, 12);
  if (sig.startsWith('\x89PNG')) return 'png';
  if (sig.startsWith('\xff\xd8\xff')) return 'jpeg';
  if (sig.startsWith('GIF8')) return 'gif';
  if (sig.startsWith('RIFF') && sig.slice(8) === 'WEBP') return 'webp';
  return undefined;
}
