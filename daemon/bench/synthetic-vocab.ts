// Seeded byte-level vocabularies for constrained-decoding tests and benchmarks: all 256 single
// bytes (as byte-level BPE has), JSON punctuation runs, tool tags, ASCII words, digits and
// multi-byte UTF-8 (whole CJK characters and split emoji), plus one end token (the last id).
import { Prng } from '../../robot/common/prng.js';

const enc = new TextEncoder();
const STRUCTURAL = [
  '<tool_call>',
  '</tool_call>',
  '{"',
  '": ',
  '", "',
  '"}',
  '}}',
  '}\n',
  '\n</',
  ', "',
  '": "',
  '": [',
  '], "',
  'true',
  'false',
  'null',
  '12',
  '0.',
  '-1',
  '"name',
  'é',
  '中',
  '😀',
  '\\n',
  '\\"',
];
const PIECES = [
  '"',
  ',',
  ' ',
  ':',
  '{',
  '}',
  '[',
  ']',
  '\\',
  '.',
  '-',
  '0',
  '5',
  '9',
  'a',
  'e',
  'n',
  'x',
  'Z',
  '<',
  '>',
  '\n',
];

export interface SyntheticVocab {
  bytes: Array<Uint8Array | null>;
  end: number;
}

/** `size` tokens before the end token (at least 256 + the structural ones). */
export function syntheticByteVocab(seed: number, size: number): SyntheticVocab {
  const r = new Prng(seed);
  const bytes: Array<Uint8Array | null> = [];
  const seen = new Set<string>();
  const add = (b: Uint8Array): void => {
    const k = String.fromCharCode(...b);
    if (!seen.has(k)) {
      seen.add(k);
      bytes.push(b);
    }
  };
  for (let b = 0; b < 256; b++) add(Uint8Array.of(b));
  for (const s of STRUCTURAL) add(enc.encode(s));
  while (bytes.length < size) {
    const u = r.next();
    const parts: number[] = [];
    if (u < 0.4) {
      // A word, often with a leading space.
      if (r.next() < 0.6) parts.push(0x20);
      for (let i = 0, n = 2 + r.int(8); i < n; i++) parts.push(0x61 + r.int(26));
    } else if (u < 0.6) {
      for (let i = 0, n = 1 + r.int(3); i < n; i++)
        parts.push(...enc.encode(String.fromCodePoint(0x4e00 + r.int(0x5000))));
    } else {
      for (let i = 0, n = 2 + r.int(6); i < n; i++) {
        const v = r.next();
        if (v < 0.5) parts.push(...enc.encode(PIECES[r.int(PIECES.length)]));
        else if (v < 0.9) parts.push(0x20 + r.int(95));
        else parts.push(0x80 + r.int(128));
      }
    }
    add(Uint8Array.from(parts));
  }
  bytes.push(null);
  return { bytes, end: bytes.length - 1 };
}
