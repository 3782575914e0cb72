// Splits streamed model text into content and tool calls, whatever the chunk boundaries. Text that
// may be the start of a tag is held back; a Hermes body is scanned as JSON so `</tool_call>` inside
// a string value does not end it. The first malformed call ends parsing with an error event.
import { ToolCallError } from './errors.js';
import { parseHermesBody } from './hermes.js';
import { type ToolCall, resolveCall } from './resolve.js';
import type { ToolDef } from './tools.js';
import { parseXmlFunction } from './xml.js';

export type ParserEvent =
  | { type: 'content'; text: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'error'; error: ToolCallError };

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const FN_OPEN = '<function=';
const FN_CLOSE = '</function>';
const TEXT_TAGS = [OPEN, FN_OPEN, CLOSE];

type Mode = 'text' | 'start' | 'json' | 'after-json' | 'xml' | 'bare' | 'after-bare' | 'failed';

export class ToolCallStreamParser {
  private mode: Mode = 'text';
  /** Text mode: a possible tag start; after-json/after-bare: the closing tag matched so far. */
  private held = '';
  /** The current call's text from its opening tag. */
  private raw = '';
  private body = '';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private content = '';
  private calls = 0;
  private events: ParserEvent[] = [];

  constructor(private readonly tools: readonly ToolDef[]) {}

  push(chunk: string): ParserEvent[] {
    for (const ch of chunk) {
      if (this.mode === 'failed') break;
      this.step(ch);
    }
    return this.drain();
  }

  /**
   * The output ended: releases held text or reports an unfinished call. `cut`: the length limit
   * or a stop string ended it, so an unfinished call is the model's text, returned as content.
   */
  end(cut = false): ParserEvent[] {
    if (this.mode === 'text' || this.mode === 'after-bare') {
      this.content += this.held;
      this.held = '';
    } else if (cut && this.mode !== 'failed') {
      this.content += this.raw;
      this.raw = this.body = this.held = '';
      this.mode = 'text';
    } else if (this.mode !== 'failed') {
      const tag =
        this.mode === 'bare' ? `<function=...> is never closed by ${FN_CLOSE}` : `${OPEN} is never closed by ${CLOSE}`;
      this.fail(new ToolCallError('unclosed_tag', `the output ended inside a tool call: ${tag}`, this.raw));
    }
    // After calls, whitespace alone at the end is layout too (the reply's content stays null).
    if (this.calls > 0 && this.content.trim() === '') this.content = '';
    this.flushContent();
    return this.drain();
  }

  private step(ch: string): void {
    switch (this.mode) {
      case 'text':
        return this.text(ch);
      case 'start':
        this.raw += ch;
        if (/\s/.test(ch)) return;
        this.body = ch;
        if (ch === '{') {
          this.mode = 'json';
          this.depth = 1;
          this.inString = false;
          this.escaped = false;
        } else if (ch === '<') this.mode = 'xml';
        else
          this.fail(
            new ToolCallError(
              'invalid_call',
              `expected a JSON object or <function=...> after ${OPEN}, got ${JSON.stringify(ch)}`,
              this.raw,
            ),
          );
        return;
      case 'json':
        this.raw += ch;
        this.body += ch;
        return this.json(ch);
      case 'after-json':
        this.raw += ch;
        if (this.held === '' && /\s/.test(ch)) return;
        this.held += ch;
        if (!CLOSE.startsWith(this.held)) {
          this.fail(
            new ToolCallError(
              'invalid_call',
              `unexpected text after the tool call's JSON object: ${JSON.stringify(this.held)}`,
              this.raw,
            ),
          );
        } else if (this.held === CLOSE) {
          this.held = '';
          this.finish(() => parseHermesBody(this.body, this.raw));
        }
        return;
      case 'xml':
        this.raw += ch;
        this.body += ch;
        if (this.body.endsWith(CLOSE)) this.finish(() => parseXmlFunction(this.body.slice(0, -CLOSE.length), this.raw));
        return;
      case 'bare':
        this.raw += ch;
        this.body += ch;
        if (this.body.endsWith(FN_CLOSE)) {
          if (this.finish(() => parseXmlFunction(this.body, this.raw))) this.mode = 'after-bare';
        }
        return;
      case 'after-bare': {
        // A bare function may still be followed by a stray </tool_call>: swallow it.
        this.held += ch;
        const t = this.held.trimStart();
        if (t === CLOSE) {
          this.held = '';
          this.mode = 'text';
        } else if (!CLOSE.startsWith(t)) {
          const again = this.held;
          this.held = '';
          this.mode = 'text';
          for (const c of again) this.text(c);
        }
        return;
      }
      case 'failed':
        return;
    }
  }

  private text(ch: string): void {
    this.held += ch;
    for (;;) {
      if (this.held === OPEN) {
        this.mode = 'start';
        this.raw = OPEN;
        this.held = '';
        return;
      }
      if (this.held === FN_OPEN) {
        this.mode = 'bare';
        this.raw = this.body = FN_OPEN;
        this.held = '';
        return;
      }
      if (this.held === CLOSE) {
        return this.fail(new ToolCallError('unexpected_tag', `${CLOSE} without an opening ${OPEN}`, CLOSE));
      }
      if (this.held === '' || TEXT_TAGS.some((t) => t.startsWith(this.held))) return;
      this.content += this.held[0];
      this.held = this.held.slice(1);
    }
  }

  private json(ch: string): void {
    if (this.inString) {
      if (this.escaped) this.escaped = false;
      else if (ch === '\\') this.escaped = true;
      else if (ch === '"') this.inString = false;
      return;
    }
    if (ch === '"') this.inString = true;
    else if (ch === '{' || ch === '[') this.depth++;
    else if (ch === '}' || ch === ']') {
      if (--this.depth === 0) {
        this.mode = 'after-json';
        this.held = '';
      }
    }
  }

  /** Resolves the finished call; false (and failed) when it is malformed. */
  private finish(parse: () => Parameters<typeof resolveCall>[0]): boolean {
    try {
      const call = resolveCall(parse(), this.tools, this.raw);
      // Whitespace right before a call (between calls, after text) is layout, not content.
      this.content = this.content.trimEnd();
      this.flushContent();
      this.events.push({ type: 'tool_call', call });
      this.calls++;
      this.mode = 'text';
      this.raw = this.body = '';
      return true;
    } catch (e) {
      if (!(e instanceof ToolCallError)) throw e;
      this.fail(e);
      return false;
    }
  }

  private fail(error: ToolCallError): void {
    this.flushContent();
    this.events.push({ type: 'error', error });
    this.mode = 'failed';
  }

  private flushContent(): void {
    if (this.content) this.events.push({ type: 'content', text: this.content });
    this.content = '';
  }

  private drain(): ParserEvent[] {
    // Trailing whitespace waits (dropped if a call follows), whatever the chunk boundaries.
    const kept = this.content.trimEnd();
    const tail = this.content.slice(kept.length);
    this.content = kept;
    this.flushContent();
    this.content = tail;
    const out = this.events;
    this.events = [];
    return out;
  }
}
