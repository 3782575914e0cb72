// A strict JSON (RFC 8259) parser for model output. Unlike JSON.parse it says what went wrong
// in words a model can act on: NaN/Infinity literals, duplicate keys, truncation, trailing
// text (often a second decision), nesting depth. Keys are set as own properties, so
// "__proto__" is an ordinary key.

export type JsonResult = { ok: true; value: unknown } | { ok: false; error: string; position: number };

const MAX_DEPTH = 32;
// Sticky scanners (set lastIndex, then test/exec): a run of plain string characters, a number.
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON strings may not hold raw U+0000-U+001F
const PLAIN = /[^"\\\u0000-\u001f]+/y;
const NUMBER = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
// Characters that continue a malformed number ("1.2.3", "01", "1e+"): codes of 0-9 . e E + -.
const NUMBER_CHAR = new Set([...'0123456789.eE+-'].map((c) => c.charCodeAt(0)));

class JsonError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** Parses one JSON value surrounded by optional whitespace; anything else after it is an error. */
export function parseStrictJson(text: string, maxDepth = MAX_DEPTH): JsonResult {
  const p = new Parser(text, 0, maxDepth);
  try {
    p.space();
    const value = p.value(0);
    p.space();
    if (p.i < text.length) {
      const what =
        text[p.i] === '{' || text[p.i] === '['
          ? 'another JSON value'
          : `unexpected text ${quote(text.slice(p.i, p.i + 12))}`;
      throw new JsonError(`${what} after the JSON value at position ${p.i}`, p.i);
    }
    return { ok: true, value };
  } catch (err) {
    if (err instanceof JsonError) return { ok: false, error: err.message, position: err.position };
    throw err;
  }
}

class Parser {
  constructor(
    readonly s: string,
    public i: number,
    readonly maxDepth: number,
  ) {}

  space(): void {
    let i = this.i;
    for (let c = this.s.charCodeAt(i); c === 32 || c === 10 || c === 13 || c === 9; c = this.s.charCodeAt(++i));
    this.i = i;
  }

  value(depth: number): unknown {
    if (depth > this.maxDepth)
      throw new JsonError(`JSON nested deeper than ${this.maxDepth} levels at position ${this.i}`, this.i);
    const c = this.s[this.i];
    if (c === undefined) throw this.truncated();
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    const tail = this.s.slice(this.i);
    if (['true', 'false', 'null'].some((w) => w.startsWith(tail))) throw this.truncated();
    const bad = /^[-+]?(NaN|nan|Infinity|inf)/.exec(tail.slice(0, 12));
    if (bad) throw new JsonError(`${bad[0]} at position ${this.i} is not valid JSON: numbers must be finite`, this.i);
    throw new JsonError(`unexpected ${quote(c)} at position ${this.i} where a JSON value should start`, this.i);
  }

  private object(depth: number): Record<string, unknown> {
    const o: Record<string, unknown> = {};
    this.sequence('}', () => {
      if (this.s[this.i] !== '"') throw this.expected('a "quoted" key');
      const at = this.i;
      const key = this.string();
      if (Object.hasOwn(o, key)) throw new JsonError(`duplicate key ${quote(key)} at position ${at}`, at);
      this.space();
      if (this.s[this.i] !== ':') throw this.expected('":"');
      this.i++;
      this.space();
      const v = this.value(depth + 1);
      // An assignment to "__proto__" would set the prototype; defining it for every key is ~2× slower.
      if (key === '__proto__')
        Object.defineProperty(o, key, { value: v, enumerable: true, writable: true, configurable: true });
      else o[key] = v;
    });
    return o;
  }

  private array(depth: number): unknown[] {
    const a: unknown[] = [];
    this.sequence(']', () => a.push(this.value(depth + 1)));
    return a;
  }

  /** Comma-separated items from the opener at i up to `close`. */
  private sequence(close: string, item: () => void): void {
    this.i++;
    this.space();
    if (this.s[this.i] === close) {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      item();
      this.space();
      if (this.s[this.i] === ',') this.i++;
      else if (this.s[this.i] === close) {
        this.i++;
        return;
      } else throw this.expected(`"," or "${close}"`);
    }
  }

  private string(): string {
    const start = this.i;
    this.i++;
    let out = '';
    for (;;) {
      const c = this.s[this.i];
      if (c === undefined) throw this.truncated();
      if (c === '"') {
        this.i++;
        return out;
      }
      if (c < ' ')
        throw new JsonError(
          `control character U+${c.charCodeAt(0).toString(16).padStart(4, '0')} inside the string at position ${this.i} (escape it)`,
          this.i,
        );
      if (c !== '\\') {
        PLAIN.lastIndex = this.i;
        PLAIN.test(this.s);
        out += this.s.slice(this.i, PLAIN.lastIndex);
        this.i = PLAIN.lastIndex;
        continue;
      }
      const e = this.s[this.i + 1];
      if (e === undefined) throw this.truncated();
      const simple: Record<string, string> = {
        '"': '"',
        '\\': '\\',
        '/': '/',
        b: '\b',
        f: '\f',
        n: '\n',
        r: '\r',
        t: '\t',
      };
      if (e in simple) {
        out += simple[e];
        this.i += 2;
      } else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(this.s.slice(this.i + 2, this.i + 6))) {
        out += String.fromCharCode(parseInt(this.s.slice(this.i + 2, this.i + 6), 16));
        this.i += 6;
      } else if (e === 'u' && this.i + 6 > this.s.length) throw this.truncated();
      else throw new JsonError(`invalid escape \\${e} in the string starting at position ${start}`, this.i);
    }
  }

  private number(): number {
    NUMBER.lastIndex = this.i;
    const fast = NUMBER.exec(this.s);
    const after = this.s.charCodeAt(NUMBER.lastIndex); // NaN at the end
    if (fast && !Number.isNaN(after) && !NUMBER_CHAR.has(after)) {
      this.i = NUMBER.lastIndex;
      return Number(fast[0]);
    }
    const head = this.s.slice(this.i, this.i + 400);
    const bad = /^-(NaN|nan|Infinity|inf)/.exec(head);
    if (bad) throw new JsonError(`${bad[0]} at position ${this.i} is not valid JSON: numbers must be finite`, this.i);
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(head);
    const len = m?.[0].length ?? 0;
    const next = this.s[this.i + len];
    // "1." or "-" at the very end is a cut-off number, not a malformed one.
    if (/^-?\d*\.?\d*([eE][+-]?)?$/.test(this.s.slice(this.i)) && (!m || next !== undefined)) throw this.truncated();
    if (!m) throw new JsonError(`malformed number at position ${this.i}`, this.i);
    if (next !== undefined && /[0-9.eE+-]/.test(next))
      throw new JsonError(
        `malformed number ${quote(this.s.slice(this.i, this.i + m[0].length + 1))} at position ${this.i}`,
        this.i,
      );
    this.i += m[0].length;
    return Number(m[0]);
  }

  private truncated(): JsonError {
    return new JsonError(`JSON ends early at position ${this.i} (truncated?)`, this.i);
  }

  private expected(what: string): JsonError {
    if (this.i >= this.s.length) return this.truncated();
    return new JsonError(`expected ${what} at position ${this.i}, found ${quote(this.s[this.i]!)}`, this.i);
  }
}

function quote(s: string): string {
  return JSON.stringify(s);
}
