// Synthetic Qwen-layout byte-level BPE tokenizer: 256 byte tokens, merges learned from a small
// built-in corpus, then seeded random merges until the regular vocabulary is full, then Qwen's
// 26 added tokens (<|endoftext|> first). With vocab_size 151936 every id matches Qwen3's.
import { Prng } from '../../robot/common/prng.js';
import { QWEN_CHAT_TEMPLATE } from './chat-template.js';
import { TOKENIZER_CORPUS } from './tokenizer-corpus.js';

/** Qwen2/Qwen3 added tokens in id order, starting at the first id after the regular vocabulary. */
export const QWEN_ADDED_TOKENS: readonly { content: string; special: boolean }[] = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<|object_ref_start|>',
  '<|object_ref_end|>',
  '<|box_start|>',
  '<|box_end|>',
  '<|quad_start|>',
  '<|quad_end|>',
  '<|vision_start|>',
  '<|vision_end|>',
  '<|vision_pad|>',
  '<|image_pad|>',
  '<|video_pad|>',
  '<tool_call>',
  '</tool_call>',
  '<|fim_prefix|>',
  '<|fim_middle|>',
  '<|fim_suffix|>',
  '<|fim_pad|>',
  '<|repo_name|>',
  '<|file_sep|>',
  '<tool_response>',
  '</tool_response>',
  '<think>',
  '</think>',
].map((content, i) => ({ content, special: i < 14 }));

/** Regular (BPE) tokens of the real Qwen3 vocabulary. */
export const QWEN_REGULAR = 151643;

/** Regular (BPE) tokens for a vocab_size: Qwen's 151643 for full-size models; small test
 *  vocabularies keep 14 unused padding rows after the added tokens, as Qwen pads its embedding. */
export function regularVocabSize(vocabSize: number): number {
  return vocabSize >= QWEN_REGULAR + QWEN_ADDED_TOKENS.length
    ? QWEN_REGULAR
    : vocabSize - QWEN_ADDED_TOKENS.length - 14;
}

export function qwenSpecialIds(regular: number) {
  return {
    endoftext: regular,
    imStart: regular + 1,
    imEnd: regular + 2,
    toolCall: regular + 14,
    toolCallEnd: regular + 15,
    toolResponse: regular + 22,
    toolResponseEnd: regular + 23,
    think: regular + 24,
    thinkEnd: regular + 25,
  };
}

/** GPT-2 byte-to-unicode table: printable bytes map to themselves, the rest to U+0100 onwards. */
export const BYTE_CHARS: readonly string[] = (() => {
  const chars = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    chars[b] = String.fromCodePoint(printable ? b : 256 + extra++);
  }
  return chars;
})();

/** Byte tokens in GPT-2/Qwen id order: printable ranges first, then the remapped bytes. */
const BYTE_ORDER: readonly number[] = [...Array(256).keys()].sort(
  (a, b) => BYTE_CHARS[a].codePointAt(0)! - BYTE_CHARS[b].codePointAt(0)!,
);

/** Qwen2's pre-tokenizer split, as stored in tokenizer.json (Oniguruma syntax) and in JS. */
export const PRETOKENIZE_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const PRETOKENIZE_JS =
  /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

export function byteLevel(text: string): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) out += BYTE_CHARS[b];
  return out;
}

/** Learns up to `maxMerges` BPE merges (pairs seen at least twice; ties broken by pair text). */
export function trainBpe(corpus: string, maxMerges: number): [string, string][] {
  const counts = new Map<string, number>();
  for (const piece of corpus.normalize('NFC').match(PRETOKENIZE_JS) ?? []) {
    const w = byteLevel(piece);
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const words = [...counts].map(([w, n]) => ({ syms: [...w], n }));
  const merges: [string, string][] = [];
  while (merges.length < maxMerges) {
    const pairs = new Map<string, number>();
    for (const { syms, n } of words) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = `${syms[i]}\u0000${syms[i + 1]}`;
        pairs.set(k, (pairs.get(k) ?? 0) + n);
      }
    }
    let best = '';
    let bestN = 1;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && n > 1 && k < best)) [best, bestN] = [k, n];
    if (bestN < 2) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    for (const w of words) {
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(w.syms[i]);
      }
      w.syms = out;
    }
  }
  return merges;
}

export interface SynthTokenizer {
  /** id → token text (byte-level) for the regular vocabulary. */
  vocab: string[];
  merges: [string, string][];
  specialIds: ReturnType<typeof qwenSpecialIds>;
  tokenizerJson: Record<string, unknown>;
  tokenizerConfigJson: Record<string, unknown>;
  generationConfigJson: Record<string, unknown>;
}

const cache = new Map<number, SynthTokenizer>();

/** generation_config.json as Qwen3 ships it (sampling defaults, stop on <|im_end|> or <|endoftext|>). */
export function generationConfig(ids: ReturnType<typeof qwenSpecialIds>): Record<string, unknown> {
  return {
    bos_token_id: ids.endoftext,
    do_sample: true,
    eos_token_id: [ids.imEnd, ids.endoftext],
    pad_token_id: ids.endoftext,
    temperature: 0.6,
    top_k: 20,
    top_p: 0.95,
    transformers_version: '4.51.0',
  };
}

/** The tokenizer files for a vocab_size (deterministic: one tokenizer per size, like a model family). */
export function synthTokenizer(vocabSize: number): SynthTokenizer {
  const hit = cache.get(vocabSize);
  if (hit) return hit;
  const regular = regularVocabSize(vocabSize);
  if (regular < 256) throw new RangeError(`vocab_size ${vocabSize} leaves fewer than 256 regular tokens`);
  const vocab = BYTE_ORDER.map((b) => BYTE_CHARS[b]);
  const known = new Set(vocab);
  const merges: [string, string][] = [];
  const add = (a: string, b: string): void => {
    merges.push([a, b]);
    vocab.push(a + b);
    known.add(a + b);
  };
  for (const [a, b] of trainBpe(TOKENIZER_CORPUS, regular - 256)) add(a, b);
  // Fill the rest with random merges of existing tokens (short ones), so every regular id decodes.
  const rng = new Prng(0x70c3);
  while (vocab.length < regular) {
    const a = vocab[rng.int(vocab.length)];
    const b = vocab[rng.int(Math.min(vocab.length, 4096))];
    if (a.length + b.length <= 12 && !known.has(a + b)) add(a, b);
  }
  const specialIds = qwenSpecialIds(regular);
  const added = QWEN_ADDED_TOKENS.map((t, i) => ({
    id: regular + i,
    content: t.content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: t.special,
  }));
  const byteLevelStep = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: PRETOKENIZE_PATTERN }, behavior: 'Isolated', invert: false },
        byteLevelStep,
      ],
    },
    post_processor: byteLevelStep,
    decoder: byteLevelStep,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab.map((t, id) => [t, id])),
      merges,
    },
  };
  const tokenizerConfigJson = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...rest }) => [String(id), rest])),
    additional_special_tokens: QWEN_ADDED_TOKENS.filter((t) => t.special && t.content !== '<|endoftext|>').map(
      (t) => t.content,
    ),
    bos_token: null,
    chat_template: QWEN_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: 131072,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  const generationConfigJson = generationConfig(specialIds);
  const result = { vocab, merges, specialIds, tokenizerJson, tokenizerConfigJson, generationConfigJson };
  cache.set(vocabSize, result);
  return result;
}
