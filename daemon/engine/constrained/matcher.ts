// Byte-level incremental matcher for grammar nodes. A state is a set of threads; a thread is a
// persistent stack of frames (top = innermost node being matched), so advancing by one byte only
// allocates the new top. Frames know the fewest bytes that finish them, and each thread has a key
// that clips counters far from their limits, so equal keys allow exactly the same tokens.
import { type Node, objectRemaining } from './grammar.js';
import { isComplete, minRemaining } from './number.js';

type N<K extends Node['kind']> = Extract<Node, { kind: K }>;

const OPEN = 0,
  BODY = 1,
  ESC = 2,
  UTF8 = 3,
  ITEM = 4,
  SEP = 5,
  CLOSE = 6,
  KEY = 7,
  VALUE = 8;

type Frame =
  | { t: 'lit'; node: N<'lit'>; pos: number }
  | { t: 'seq'; node: N<'seq'>; i: number }
  | { t: 'str'; node: N<'str'>; phase: number; count: number; need: number; lo: number; hi: number }
  | { t: 'num'; node: N<'num'>; text: string }
  | { t: 'arr'; node: N<'arr'>; phase: number; pos: number; count: number }
  | { t: 'obj'; node: N<'obj'>; phase: number; j: number; pos: number; emitted: boolean }
  | { t: 'end' };

export interface Thread {
  readonly f: Frame;
  readonly up: Thread | null;
  key?: string;
  /** Fewest bytes after this frame's node completes. */
  after?: number;
}

export type State = Thread[];

const END: Thread = { f: { t: 'end' }, up: null, key: 'E', after: 0 };
const SEPARATOR = [0x2c, 0x20]; // ", "
const ESCAPABLE = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));

function mk(f: Frame, up: Thread | null): Thread {
  return { f, up };
}

/** Threads at the start of `node`, followed by the frames in `up`. */
function enter(node: Node, up: Thread | null, out: Thread[]): void {
  switch (node.kind) {
    case 'lit':
      if (node.bytes.length === 0) complete(up, out);
      else out.push(mk({ t: 'lit', node, pos: 0 }, up));
      return;
    case 'seq':
      if (node.items.length === 0) complete(up, out);
      else enter(node.items[0], mk({ t: 'seq', node, i: 0 }, up), out);
      return;
    case 'alt':
      for (const o of node.options) enter(o, up, out);
      return;
    case 'str':
      out.push(mk({ t: 'str', node, phase: OPEN, count: 0, need: 0, lo: 0, hi: 0 }, up));
      return;
    case 'num':
      out.push(mk({ t: 'num', node, text: '' }, up));
      return;
    case 'arr':
      out.push(mk({ t: 'arr', node, phase: OPEN, pos: 0, count: 0 }, up));
      return;
    case 'obj':
      out.push(mk({ t: 'obj', node, phase: OPEN, j: 0, pos: 0, emitted: false }, up));
  }
}

/** The child on top of `up` has finished. */
function complete(up: Thread | null, out: Thread[]): void {
  if (!up) {
    out.push(END);
    return;
  }
  const f = up.f;
  if (f.t === 'seq') {
    if (f.i + 1 < f.node.items.length)
      enter(f.node.items[f.i + 1], mk({ t: 'seq', node: f.node, i: f.i + 1 }, up.up), out);
    else complete(up.up, out);
  } else if (f.t === 'arr') arrBetween(f.node, f.count + 1, up.up, out);
  else if (f.t === 'obj') objBetween(f.node, f.j + 1, true, up.up, out);
  else throw new Error(`grammar frame ${f.t} cannot hold a child`);
}

function arrItem(node: N<'arr'>, count: number, up: Thread | null, out: Thread[]): void {
  enter(node.item, mk({ t: 'arr', node, phase: ITEM, pos: 0, count }, up), out);
}

function arrBetween(node: N<'arr'>, count: number, up: Thread | null, out: Thread[]): void {
  if (count >= node.minItems) out.push(mk({ t: 'arr', node, phase: CLOSE, pos: 0, count }, up));
  if (count < node.maxItems) out.push(mk({ t: 'arr', node, phase: SEP, pos: 0, count }, up));
}

function objBetween(node: N<'obj'>, from: number, emitted: boolean, up: Thread | null, out: Thread[]): void {
  let k = from;
  for (; k < node.props.length; k++) {
    out.push(mk({ t: 'obj', node, phase: KEY, j: k, pos: 0, emitted }, up));
    if (node.props[k].required) break;
  }
  if (k >= node.props.length) out.push(mk({ t: 'obj', node, phase: CLOSE, j: 0, pos: 0, emitted }, up));
}

function isNumberByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2e;
}

/** Threads after `b` (none = rejected). */
function feed(s: Thread, b: number, out: Thread[]): void {
  const f = s.f;
  switch (f.t) {
    case 'lit':
      if (f.node.bytes[f.pos] !== b) return;
      if (f.pos + 1 === f.node.bytes.length) complete(s.up, out);
      else out.push(mk({ t: 'lit', node: f.node, pos: f.pos + 1 }, s.up));
      return;
    case 'str':
      return feedString(s, f, b, out);
    case 'num': {
      if (isNumberByte(b)) {
        const text = f.text + String.fromCharCode(b);
        if (Number.isFinite(minRemaining(f.node.spec, text))) out.push(mk({ t: 'num', node: f.node, text }, s.up));
        return;
      }
      if (!isComplete(f.node.spec, f.text)) return;
      const next: Thread[] = [];
      complete(s.up, next);
      for (const n of next) feed(n, b, out);
      return;
    }
    case 'arr':
      if (f.phase === OPEN) {
        if (b !== f.node.open) return;
        if (f.node.minItems === 0) out.push(mk({ t: 'arr', node: f.node, phase: CLOSE, pos: 0, count: 0 }, s.up));
        if (f.node.maxItems > 0) arrItem(f.node, 0, s.up, out);
      } else if (f.phase === SEP) {
        if (SEPARATOR[f.pos] !== b) return;
        if (f.pos === 1) arrItem(f.node, f.count, s.up, out);
        else out.push(mk({ t: 'arr', node: f.node, phase: SEP, pos: 1, count: f.count }, s.up));
      } else if (f.phase === CLOSE && b === f.node.close) complete(s.up, out);
      return;
    case 'obj':
      if (f.phase === OPEN) {
        if (b === 0x7b) objBetween(f.node, 0, false, s.up, out);
      } else if (f.phase === KEY) {
        const p = f.node.props[f.j];
        const lit = f.emitted ? p.later : p.first;
        if (lit[f.pos] !== b) return;
        if (f.pos + 1 === lit.length)
          enter(p.value, mk({ t: 'obj', node: f.node, phase: VALUE, j: f.j, pos: 0, emitted: true }, s.up), out);
        else out.push(mk({ ...f, pos: f.pos + 1 }, s.up));
      } else if (f.phase === CLOSE && b === 0x7d) complete(s.up, out);
      return;
    case 'seq':
    case 'end':
      return;
  }
}

// JSON string body: no raw control characters, simple escapes only, well-formed UTF-8
// (Unicode Table 3-7); characters are counted when their first byte arrives.
function feedString(s: Thread, f: Extract<Frame, { t: 'str' }>, b: number, out: Thread[]): void {
  const str = (phase: number, count: number, need = 0, lo = 0, hi = 0): void => {
    out.push(mk({ t: 'str', node: f.node, phase, count, need, lo, hi }, s.up));
  };
  if (f.phase === OPEN) {
    if (b === 0x22) str(BODY, 0);
    return;
  }
  if (f.phase === ESC) {
    if (ESCAPABLE.has(b)) str(BODY, f.count);
    return;
  }
  if (f.phase === UTF8) {
    if (b < f.lo || b > f.hi) return;
    if (f.need === 1) str(BODY, f.count);
    else str(UTF8, f.count, f.need - 1, 0x80, 0xbf);
    return;
  }
  if (b === 0x22) {
    if (f.count >= f.node.minLength) complete(s.up, out);
    return;
  }
  if (b < 0x20 || f.count >= f.node.maxLength) return;
  const c = f.count + 1;
  if (b === 0x5c) str(ESC, c);
  else if (b < 0x80) str(BODY, c);
  else if (b >= 0xc2 && b <= 0xdf) str(UTF8, c, 1, 0x80, 0xbf);
  else if (b === 0xe0) str(UTF8, c, 2, 0xa0, 0xbf);
  else if (b === 0xed) str(UTF8, c, 2, 0x80, 0x9f);
  else if (b >= 0xe1 && b <= 0xef) str(UTF8, c, 2, 0x80, 0xbf);
  else if (b === 0xf0) str(UTF8, c, 3, 0x90, 0xbf);
  else if (b >= 0xf1 && b <= 0xf3) str(UTF8, c, 3, 0x80, 0xbf);
  else if (b === 0xf4) str(UTF8, c, 3, 0x80, 0x8f);
}

/** Matches grammar output byte by byte; `window` = the longest token in bytes (for key clipping). */
export class Matcher {
  constructor(readonly window: number) {}

  start(root: Node): State {
    const out: Thread[] = [];
    enter(root, null, out);
    return this.dedupe(out);
  }

  advance(state: State, b: number): State {
    const out: Thread[] = [];
    for (const s of state) feed(s, b, out);
    return out.length > 1 ? this.dedupe(out) : out;
  }

  /**
   * Whether the state is inside a string with at least 2 × window characters of room and its
   * minimum length met: then plain ASCII text (no '"', '\\' or control bytes) of up to one token
   * leaves its key, and so the allowed tokens, unchanged.
   */
  inFreeString(state: State): boolean {
    if (state.length !== 1) return false;
    const f = state[0].f;
    return (
      f.t === 'str' && f.phase === BODY && f.count >= f.node.minLength && f.node.maxLength - f.count > 2 * this.window
    );
  }

  /** Fewest bytes that complete the output from this state (Infinity for an empty state). */
  minRemaining(state: State): number {
    let best = Infinity;
    for (const s of state) best = Math.min(best, frameRemaining(s.f) + this.after(s));
    return best;
  }

  accepting(state: State): boolean {
    return state.some((s) => this.threadAccepting(s));
  }

  key(state: State): string {
    if (state.length === 1) return this.threadKey(state[0]);
    return state
      .map((s) => this.threadKey(s))
      .sort()
      .join('|');
  }

  private threadAccepting(s: Thread): boolean {
    if (s.f.t === 'end') return true;
    if (s.f.t !== 'num' || !isComplete(s.f.node.spec, s.f.text)) return false;
    const next: Thread[] = [];
    complete(s.up, next);
    return next.some((n) => this.threadAccepting(n));
  }

  private dedupe(threads: Thread[]): Thread[] {
    const seen = new Map<string, Thread>();
    for (const s of threads) {
      const k = this.threadKey(s);
      if (!seen.has(k)) seen.set(k, s);
    }
    return [...seen.values()];
  }

  private after(s: Thread): number {
    if (s.after !== undefined) return s.after;
    s.after = s.up ? childRemaining(s.up.f) + this.after(s.up) : 0;
    return s.after;
  }

  private threadKey(s: Thread): string {
    if (s.key !== undefined) return s.key;
    s.key = this.frameKey(s.f) + (s.up ? `/${this.threadKey(s.up)}` : '');
    return s.key;
  }

  private frameKey(f: Frame): string {
    const w = this.window;
    switch (f.t) {
      case 'lit':
        return `l${f.node.id}.${f.pos}`;
      case 'seq':
        return `q${f.node.id}.${f.i}`;
      case 'str': {
        const free = f.count >= f.node.minLength && f.node.maxLength - f.count > w;
        return `s${f.node.id}.${f.phase}.${free ? '*' : f.count}.${f.need}.${f.lo}.${f.hi}`;
      }
      case 'num':
        return `n${f.node.id}.${f.text}`;
      case 'arr': {
        const free = f.count >= f.node.minItems && f.node.maxItems - f.count > w;
        return `a${f.node.id}.${f.phase}.${f.pos}.${free ? '*' : f.count}`;
      }
      case 'obj':
        return `o${f.node.id}.${f.phase}.${f.j}.${f.pos}.${f.emitted ? 1 : 0}`;
      case 'end':
        return 'E';
    }
  }
}

function itemsAfter(node: N<'arr'>, count: number): number {
  return count >= node.minItems ? 1 : (node.minItems - count) * (2 + node.item.minLen) + 1;
}

/** Fewest bytes that finish the frame itself (its node), not counting what follows it. */
function frameRemaining(f: Frame): number {
  switch (f.t) {
    case 'lit':
      return f.node.bytes.length - f.pos;
    case 'str': {
      const chars = Math.max(0, f.node.minLength - f.count) + 1;
      if (f.phase === OPEN) return f.node.minLen;
      return chars + (f.phase === ESC ? 1 : f.phase === UTF8 ? f.need : 0);
    }
    case 'num':
      return minRemaining(f.node.spec, f.text);
    case 'arr':
      if (f.phase === OPEN) return f.node.minLen;
      if (f.phase === SEP) return 2 - f.pos + f.node.item.minLen + itemsAfter(f.node, f.count + 1);
      return 1;
    case 'obj': {
      if (f.phase === OPEN) return f.node.minLen;
      if (f.phase === CLOSE) return 1;
      const p = f.node.props[f.j];
      return (f.emitted ? p.later : p.first).length - f.pos + p.value.minLen + objectRemaining(f.node, f.j + 1, true);
    }
    case 'seq':
    case 'end':
      return 0;
  }
}

/** Bytes a frame still needs after its current child finishes. */
function childRemaining(f: Frame): number {
  if (f.t === 'seq') {
    let sum = 0;
    for (let k = f.i + 1; k < f.node.items.length; k++) sum += f.node.items[k].minLen;
    return sum;
  }
  if (f.t === 'arr') return itemsAfter(f.node, f.count + 1);
  if (f.t === 'obj') return objectRemaining(f.node, f.j + 1, true);
  return 0;
}
