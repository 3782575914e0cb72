// A thinking model's output split into its reasoning and its answer, whatever the chunk
// boundaries: the text between a `<think>` that opens the output (or the prompt) and `</think>`
// is reasoning (OpenAI-compatible servers return it as `reasoning_content`), without the
// whitespace at its two ends (as llama.cpp trims it); the whitespace after `</think>` is dropped. Tags inside the reasoning are plain text there, so a tool call the
// model only thought about is never parsed, let alone run.

export type ReasoningPiece = { type: 'reasoning' | 'content'; text: string };

const OPEN = '<think>';
const CLOSE = '</think>';

/** Whether a rendered prompt's end leaves the model inside its reasoning (templates that open `<think>`). */
export function promptOpensThinking(promptTail: string): boolean {
  return /<think>\s*$/.test(promptTail);
}

export class ReasoningSplitter {
  /** start: only whitespace or part of `<think>` so far; after: the whitespace after `</think>`. */
  private mode: 'start' | 'thinking' | 'after' | 'content';
  private held = '';
  private out: ReasoningPiece[] = [];
  /** Whether any reasoning text has been emitted (the whitespace before it is dropped). */
  private reasoned = false;

  /** `thinking`: the prompt opened `<think>`, so the output starts inside the reasoning. */
  constructor(thinking: boolean) {
    this.mode = thinking ? 'thinking' : 'start';
  }

  push(chunk: string): ReasoningPiece[] {
    for (const ch of chunk) this.step(ch);
    if (this.mode === 'thinking') this.emitThinking();
    return this.take();
  }

  /** The output ended: what is held is released as what it was part of. */
  end(): ReasoningPiece[] {
    if (this.mode === 'start') this.emit('content', this.held);
    else if (this.mode === 'thinking') this.emit('reasoning', this.held.trimEnd());
    this.held = '';
    return this.take();
  }

  private step(ch: string): void {
    switch (this.mode) {
      case 'content':
        return this.emit('content', ch);
      case 'start': {
        this.held += ch;
        const t = this.held.trimStart();
        if (t === OPEN) {
          this.mode = 'thinking';
          this.held = '';
        } else if (!OPEN.startsWith(t)) {
          this.mode = 'content';
          this.emit('content', this.held);
          this.held = '';
        }
        return;
      }
      case 'thinking':
        this.held += ch;
        if (this.held.endsWith(CLOSE)) {
          this.emit('reasoning', this.held.slice(0, -CLOSE.length).trimEnd());
          this.held = '';
          this.mode = 'after';
        }
        return;
      case 'after':
        if (/\s/.test(ch)) return;
        this.mode = 'content';
        return this.emit('content', ch);
    }
  }

  /** Releases reasoning text that cannot be the start of `</think>`, nor whitespace before it. */
  private emitThinking(): void {
    let keep = Math.min(this.held.length, CLOSE.length - 1);
    while (keep > 0 && !CLOSE.startsWith(this.held.slice(-keep))) keep--;
    while (keep < this.held.length && /\s/.test(this.held[this.held.length - keep - 1]!)) keep++;
    this.emit('reasoning', this.held.slice(0, this.held.length - keep));
    this.held = this.held.slice(this.held.length - keep);
  }

  private emit(type: ReasoningPiece['type'], text: string): void {
    if (type === 'reasoning' && !this.reasoned) text = text.trimStart();
    if (!text) return;
    if (type === 'reasoning') this.reasoned = true;
    const last = this.out.at(-1);
    if (last?.type === type) last.text += text;
    else this.out.push({ type, text });
  }

  private take(): ReasoningPiece[] {
    const out = this.out;
    this.out = [];
    return out;
  }
}
