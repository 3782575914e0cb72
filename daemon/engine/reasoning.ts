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
  /** start: the part of `<think>` seen; thinking: the longest suffix that may begin `</think>`. */
  private held = '';
  /** The whitespace before `held`: emitted only once text follows it (each character once, so a
   *  model stuck on whitespace costs linear time). */
  private ws = '';
  private out: ReasoningPiece[] = [];
  /** Whether any reasoning text has been emitted (the whitespace before it is dropped). */
  private reasoned = false;

  /** `thinking`: the prompt opened `<think>`, so the output starts inside the reasoning. */
  constructor(thinking: boolean) {
    this.mode = thinking ? 'thinking' : 'start';
  }

  push(chunk: string): ReasoningPiece[] {
    for (const ch of chunk) this.step(ch);
    return this.take();
  }

  /** The output ended: what is held is released as what it was part of. */
  end(): ReasoningPiece[] {
    if (this.mode === 'start') this.emit('content', this.ws + this.held);
    else if (this.mode === 'thinking') this.emit('reasoning', (this.ws + this.held).trimEnd());
    this.ws = '';
    this.held = '';
    return this.take();
  }

  private step(ch: string): void {
    switch (this.mode) {
      case 'content':
        return this.emit('content', ch);
      case 'start':
        if (this.held === '' && /\s/.test(ch)) {
          this.ws += ch;
          return;
        }
        this.held += ch;
        if (this.held === OPEN) {
          this.mode = 'thinking';
          this.ws = '';
          this.held = '';
        } else if (!OPEN.startsWith(this.held)) {
          this.mode = 'content';
          this.emit('content', this.ws + this.held);
          this.ws = '';
          this.held = '';
        }
        return;
      case 'thinking':
        this.held += ch;
        if (this.held === CLOSE) {
          // The whitespace before `</think>` ends the reasoning: dropped.
          this.mode = 'after';
          this.ws = '';
          this.held = '';
          return;
        }
        // What can no longer begin `</think>` leaves `held`: whitespace waits, text goes out.
        while (!CLOSE.startsWith(this.held)) {
          const c = this.held[0]!;
          this.held = this.held.slice(1);
          if (/\s/.test(c)) this.ws += c;
          else {
            this.emit('reasoning', this.ws + c);
            this.ws = '';
          }
        }
        return;
      case 'after':
        if (/\s/.test(ch)) return;
        this.mode = 'content';
        return this.emit('content', ch);
    }
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
