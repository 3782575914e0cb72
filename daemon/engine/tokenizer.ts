// Text ↔ token ids over a Hugging Face tokenizer.json (@huggingface/tokenizers), plus the raw
// bytes of each token (byte-level BPE) for streaming detokenisation and constrained decoding.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { isRecord } from '../../robot/common/validation/values.js';
import { readRegularText } from '../util/file-roots.js';
import { ByteStreamDecoder, type StreamDecoder, TextDiffStreamDecoder } from './detokenizer.js';
import { TokenizerThread } from './tokenizer-thread.js';

const utf8 = new TextEncoder();

/** GPT-2's byte ↔ printable character table used by byte-level BPE vocabularies. */
function byteDecoderTable(): Map<string, number> {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table = new Map<string, number>();
  for (const b of printable) table.set(String.fromCodePoint(b), b);
  let next = 256;
  for (let b = 0; b < 256; b++) if (!printable.includes(b)) table.set(String.fromCodePoint(next++), b);
  return table;
}

const BYTE_DECODER = byteDecoderTable();

/** Texts this long are encoded section by section with the memo (shorter ones are cheap whole). */
const MEMO_MIN_CHARS = 2048;
const MEMO_MIN_SECTION_CHARS = 64;
/** Characters of sections remembered, least recently used first out (~ a few long prompts). */
const MEMO_MAX_CHARS = 4_000_000;
/** Uncached sections this long are encoded on a worker thread by encodeAsync. */
const OFF_THREAD_CHARS = 32 * 1024;

export class TokenizerLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerLoadError';
  }
}

export class TextTokenizer {
  /** One past the highest token id. */
  readonly vocabSize: number;
  /** Whether tokens map to raw bytes (byte-level BPE, as Qwen, Llama 3, GPT-2). */
  readonly byteLevel: boolean;
  private readonly tok: Tokenizer;
  /** Added tokens by id, and which of them are control tokens (special: true). */
  private readonly added = new Map<number, string>();
  private readonly special = new Set<number>();
  private bytes: Array<Uint8Array | null> | undefined;
  /** Added tokens by content, when text between them encodes on its own (see `sections`). */
  private readonly splitAt: Map<string, number> | null;
  /** Added token contents by first character, longest first. */
  private readonly byFirst = new Map<string, string[]>();
  /** Recent sections' ids: a chat prompt re-encoded each turn shares all but its last messages. */
  private readonly memo = new Map<string, number[]>();
  private memoChars = 0;
  /** Encodes long sections off the event loop (encodeAsync); null: everything here. */
  private thread: TokenizerThread | null = null;

  constructor(tokenizerJson: unknown, tokenizerConfig: Record<string, unknown> = {}) {
    if (!isRecord(tokenizerJson) || !isRecord(tokenizerJson.model))
      throw new TokenizerLoadError('tokenizer.json has no "model" object');
    try {
      this.tok = new Tokenizer(tokenizerJson, tokenizerConfig);
    } catch (e) {
      throw new TokenizerLoadError(`tokenizer.json could not be loaded: ${(e as Error).message}`);
    }
    for (const [id, t] of this.tok.get_added_tokens_decoder()) {
      this.added.set(id, t.content);
      if (t.special) this.special.add(id);
    }
    let max = -1;
    for (const id of this.tok.get_vocab(true).values()) max = Math.max(max, id);
    this.vocabSize = max + 1;
    const decoder = tokenizerJson.decoder;
    const kinds = isRecord(decoder) ? [decoder, ...(Array.isArray(decoder.decoders) ? decoder.decoders : [])] : [];
    this.byteLevel = kinds.some((d) => isRecord(d) && d.type === 'ByteLevel');
    // The library splits at added tokens first and encodes each section alone, unless a token
    // strips the whitespace beside it, is matched after normalising, or a Metaspace pre-tokenizer
    // treats the first section apart.
    const tokens = [...this.tok.get_added_tokens_decoder().values()];
    const independent =
      !tokens.some((t) => t.lstrip || t.rstrip || t.single_word || t.normalized) &&
      !JSON.stringify(tokenizerJson.pre_tokenizer ?? null).includes('"Metaspace"');
    this.splitAt = independent ? new Map(tokens.map((t) => [t.content, t.id])) : null;
    for (const t of independent ? tokens : []) {
      if (t.content === '') continue;
      const list = this.byFirst.get(t.content[0]!) ?? [];
      list.push(t.content);
      this.byFirst.set(t.content[0]!, list);
    }
    for (const list of this.byFirst.values()) list.sort((a, b) => b.length - a.length);
  }

  /**
   * Loads tokenizer.json (and tokenizer_config.json when present) from a model folder; with
   * offThread, encodeAsync encodes long texts on a worker thread that loads the same folder.
   */
  static async fromDir(dir: string, o: { offThread?: boolean } = {}): Promise<TextTokenizer> {
    const json = await readJson(join(dir, 'tokenizer.json'));
    if (json === undefined) throw new TokenizerLoadError(`${join(dir, 'tokenizer.json')} not found`);
    const config = (await readJson(join(dir, 'tokenizer_config.json'))) ?? {};
    const t = new TextTokenizer(json, isRecord(config) ? config : {});
    if (o.offThread ?? true) t.thread = new TokenizerThread(dir);
    return t;
  }

  /** Stops the worker thread, if one runs (a later encodeAsync starts it again). */
  async close(): Promise<void> {
    await this.thread?.close();
  }

  /** Token ids of `text`; special-token strings in it (e.g. `<|im_start|>`) become their ids. */
  encode(text: string): number[] {
    if (!this.splitAt || text.length < MEMO_MIN_CHARS) return this.encodeWhole(text);
    const ids: number[] = [];
    for (const s of this.sections(text)) {
      if (typeof s === 'number') ids.push(s);
      else for (const id of this.encodeSection(s)) ids.push(id);
    }
    return ids;
  }

  /**
   * The ids encode() gives, with each uncached section of OFF_THREAD_CHARS or more encoded on
   * the worker thread (here, should the thread fail), so the event loop runs meanwhile.
   */
  async encodeAsync(text: string): Promise<number[]> {
    const thread = this.thread;
    if (!thread || text.length < OFF_THREAD_CHARS) return this.encode(text);
    const parts: Array<number | readonly number[]> = [];
    for (const s of this.splitAt ? this.sections(text) : [text]) {
      if (typeof s === 'number') parts.push(s);
      else if (s.length < OFF_THREAD_CHARS || this.memo.has(s)) parts.push(this.encodeSection(s));
      else {
        const got = await thread.encode(s).then(
          (a) => this.remember(s, copyOf(a)),
          () => this.encodeSection(s),
        );
        parts.push(got);
      }
    }
    return copyOf(parts);
  }

  private encodeWhole(text: string): number[] {
    return this.tok.encode(text, { add_special_tokens: false }).ids;
  }

  /** The text between added tokens and the tokens' ids, split as the library does (longest match first). */
  private *sections(text: string): Generator<string | number> {
    const added = this.splitAt!;
    let start = 0;
    for (let i = 0; i < text.length; ) {
      const match = this.byFirst.get(text[i]!)?.find((content) => text.startsWith(content, i));
      if (match === undefined) {
        i++;
        continue;
      }
      if (i > start) yield text.slice(start, i);
      yield added.get(match)!;
      i += match.length;
      start = i;
    }
    if (start < text.length) yield text.slice(start);
  }

  private encodeSection(s: string): number[] {
    const hit = this.memo.get(s);
    if (hit) {
      this.memo.delete(s);
      this.memo.set(s, hit);
      return hit;
    }
    return this.remember(s, this.encodeWhole(s));
  }

  private remember(s: string, ids: number[]): number[] {
    if (s.length >= MEMO_MIN_SECTION_CHARS && !this.memo.has(s)) {
      this.memo.set(s, ids);
      this.memoChars += s.length;
      for (const [k] of this.memo) {
        if (this.memoChars <= MEMO_MAX_CHARS) break;
        this.memo.delete(k);
        this.memoChars -= k.length;
      }
    }
    return ids;
  }

  decode(ids: readonly number[], skipSpecial = true): string {
    return this.tok.decode([...ids], { skip_special_tokens: skipSpecial });
  }

  /** Id of a token string (vocabulary entry or added token). */
  idOf(token: string): number | undefined {
    return this.tok.token_to_id(token);
  }

  /** Whether `id` is a control token (an added token marked special, like `<|im_end|>`). */
  isSpecial(id: number): boolean {
    return this.special.has(id);
  }

  /** The bytes a token stands for; null for unknown ids. Exact for byte-level vocabularies. */
  tokenBytes(id: number): Uint8Array | null {
    return this.allBytes()[id] ?? null;
  }

  /** Bytes of every id (index = id). */
  allBytes(): ReadonlyArray<Uint8Array | null> {
    if (this.bytes) return this.bytes;
    const out: Array<Uint8Array | null> = new Array(this.vocabSize).fill(null);
    for (let id = 0; id < this.vocabSize; id++) {
      const added = this.added.get(id);
      if (added !== undefined) out[id] = utf8.encode(added);
      else {
        const piece = this.tok.id_to_token(id);
        if (piece !== undefined) out[id] = this.byteLevel ? pieceBytes(piece) : utf8.encode(this.tok.decode([id]));
      }
    }
    this.bytes = out;
    return out;
  }

  /** Incremental detokeniser for streaming; multi-byte characters split across tokens wait for their last byte. */
  streamDecoder(skipSpecial = true): StreamDecoder {
    if (this.byteLevel) {
      return new ByteStreamDecoder((id) => (skipSpecial && this.special.has(id) ? null : this.tokenBytes(id)));
    }
    return new TextDiffStreamDecoder((ids) => this.decode(ids, skipSpecial));
  }
}

function pieceBytes(piece: string): Uint8Array {
  const out: number[] = [];
  for (const ch of piece) {
    const b = BYTE_DECODER.get(ch);
    if (b !== undefined) out.push(b);
    else out.push(...utf8.encode(ch));
  }
  return Uint8Array.from(out);
}

/** The ids of parts (single ids and runs of them) in one new array: indexed writes into an array
 *  of the final length, several times faster than push or Array.from for millions of ids. */
function copyOf(parts: ArrayLike<number> | ReadonlyArray<number | readonly number[]>): number[] {
  const run = (p: number | ArrayLike<number>) => (typeof p === 'number' ? 1 : p.length);
  let n = 0;
  for (let i = 0; i < parts.length; i++) n += run(parts[i]!);
  const out = new Array<number>(n);
  let k = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (typeof p === 'number') out[k++] = p;
    else for (let j = 0; j < p.length; j++) out[k++] = p[j]!;
  }
  return out;
}

/** Model-folder JSON and templates (Qwen3's tokenizer.json is 11 MiB); the native loader's cap too. */
export const MODEL_TEXT_MAX_BYTES = 64 << 20;

/** A model folder's JSON file, or undefined when it is absent. */
export async function readJson(path: string): Promise<unknown> {
  const text = await readModelText(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TokenizerLoadError(`${path} is not valid JSON: ${(e as Error).message}`);
  }
}

/** A model folder's text file (regular, at most MODEL_TEXT_MAX_BYTES), or undefined when absent. */
export async function readModelText(path: string): Promise<string | undefined> {
  try {
    return await readRegularText(path, MODEL_TEXT_MAX_BYTES);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
