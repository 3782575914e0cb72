// Streaming detokenisation: each pushed token returns the text it completes. A character whose
// UTF-8 bytes are split across tokens is emitted once its last byte arrives.
export interface StreamDecoder {
  push(id: number): string;
  /** Text still held at the end of the stream (an incomplete character becomes U+FFFD). */
  flush(): string;
}

/** Byte-level vocabularies: token → bytes → streaming UTF-8 decoder. */
export class ByteStreamDecoder implements StreamDecoder {
  private readonly utf8 = new TextDecoder('utf-8', { fatal: false });

  /** `bytesOf` returns null for tokens that produce no text (skipped control tokens). */
  constructor(private readonly bytesOf: (id: number) => Uint8Array | null) {}

  push(id: number): string {
    const b = this.bytesOf(id);
    return b ? this.utf8.decode(b, { stream: true }) : '';
  }

  flush(): string {
    return this.utf8.decode();
  }
}

/**
 * Other vocabularies: decode a short window of ids and emit what it adds, unless it ends in U+FFFD.
 * A window that has added nothing (or only U+FFFD) for MAX_PENDING tokens is let go, so a model
 * stuck on invalid bytes or empty tokens costs O(n), not O(n²) in re-decoding.
 */
export class TextDiffStreamDecoder implements StreamDecoder {
  private readonly ids: number[] = [];
  private prefix = 0;
  private read = 0;

  constructor(private readonly decode: (ids: number[]) => string) {}

  push(id: number): string {
    this.ids.push(id);
    return this.emit(false);
  }

  flush(): string {
    return this.emit(true);
  }

  private emit(final: boolean): string {
    const before = this.decode(this.ids.slice(this.prefix, this.read));
    const after = this.decode(this.ids.slice(this.prefix));
    // A UTF-8 character spans at most 4 byte-fallback tokens: longer waits will not complete one.
    const stuck = this.ids.length - this.read > MAX_PENDING;
    if (!final && !stuck && (after.length <= before.length || after.endsWith('\uFFFD'))) return '';
    this.prefix = this.read;
    this.read = this.ids.length;
    return after.length > before.length ? after.slice(before.length) : '';
  }
}

const MAX_PENDING = 8;
