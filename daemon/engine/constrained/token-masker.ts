// Token masks from a grammar: walk the vocabulary trie together with the matcher and keep the
// tokens whose bytes leave a valid prefix. Masks are cached per matcher key (LRU by bytes). Each
// allowed token also records the fewest bytes still needed after it, so near the end of the token
// budget only tokens that can still be closed in time stay allowed (every grammar terminates).
import type { TokenConstraint } from '../generate.js';
import { GrammarError, type Node } from './grammar.js';
import { Matcher, type State } from './matcher.js';
import type { TokenTrie } from './token-trie.js';

interface MaskEntry {
  tokens: Int32Array;
  /** Fewest bytes to complete after each token (saturated at 65535). */
  rest: Uint16Array;
  /** The output may end here (end tokens allowed). */
  end: boolean;
  bytes: number;
}

export interface MaskerStats {
  hits: number;
  misses: number;
  nodesVisited: number;
}

// Bytes the shortest completions use; each must exist as a one-byte token so that the budget
// rule (one byte per remaining token) holds.
const NEEDED_BYTES = [0x0a, ...Array.from({ length: 0x5f }, (_, i) => 0x20 + i)];

export class GrammarMasker {
  readonly matcher: Matcher;
  readonly stats: MaskerStats = { hits: 0, misses: 0, nodesVisited: 0 };
  private readonly cache = new Map<string, MaskEntry>();
  private cacheBytes = 0;

  constructor(
    readonly trie: TokenTrie,
    readonly root: Node,
    private readonly maxCacheBytes = 16 << 20,
  ) {
    this.matcher = new Matcher(trie.maxDepth);
    const single = new Set<number>();
    trie.vocab.bytes.forEach((b) => {
      if (b && b.length === 1) single.add(b[0]);
    });
    const missing = NEEDED_BYTES.filter((b) => !single.has(b));
    if (missing.length > 0) {
      throw new GrammarError(
        '$',
        `constrained decoding needs a one-byte token for every printable ASCII byte; the vocabulary lacks ${missing.map((b) => `0x${b.toString(16)}`).join(', ')}`,
      );
    }
    if (trie.vocab.endTokens.length === 0)
      throw new GrammarError('$', 'constrained decoding needs at least one end (eos) token');
  }

  /** A fresh constraint for one request. */
  start(): GrammarConstraint {
    return new GrammarConstraint(this, this.matcher.start(this.root));
  }

  entry(state: State): MaskEntry {
    const key = this.matcher.key(state);
    const hit = this.cache.get(key);
    if (hit) {
      this.stats.hits++;
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    this.stats.misses++;
    const entry = this.walk(state);
    entry.bytes += 2 * key.length; // the key is kept too (UTF-16), and can be larger than the mask
    this.cache.set(key, entry);
    this.cacheBytes += entry.bytes;
    for (const [k, e] of this.cache) {
      if (this.cacheBytes <= this.maxCacheBytes || this.cache.size <= 1) break;
      this.cache.delete(k);
      this.cacheBytes -= e.bytes;
    }
    return entry;
  }

  private walk(root: State): MaskEntry {
    const t = this.trie;
    const m = this.matcher;
    const states: State[] = [root];
    const tokens: number[] = [];
    const rest: number[] = [];
    let visited = 0;
    // The same parent state recurs at many nodes; remember what it implies.
    let lastState: State | undefined;
    let lastRest = 0;
    let lastFree = false;
    const note = (s: State): void => {
      if (s === lastState) return;
      lastState = s;
      lastRest = Math.min(65535, m.minRemaining(s));
      lastFree = m.inFreeString(s);
    };
    for (let i = 0; i < t.size; ) {
      visited++;
      const parent = states[t.depth[i] - 1];
      note(parent);
      if (lastFree && t.plain[i]) {
        // Plain text inside a free string: the whole subtree is allowed and stays in this state.
        for (let k = t.tokBefore[i]; k < t.tokBefore[t.end[i]]; k++) {
          tokens.push(t.ids[k]);
          rest.push(lastRest);
        }
        i = t.end[i];
        continue;
      }
      // A plain byte in a free string keeps the key: reuse the state instead of copying it (its
      // character count may lag by up to one token, which the 2 × window margin absorbs).
      const b = t.byte[i];
      const next = lastFree && b >= 0x20 && b <= 0x7e && b !== 0x22 && b !== 0x5c ? parent : m.advance(parent, b);
      if (next.length === 0) {
        i = t.end[i];
        continue;
      }
      states[t.depth[i]] = next;
      const count = t.tokCount[i];
      if (count > 0) {
        note(next);
        for (let k = t.tokFirst[i]; k < t.tokFirst[i] + count; k++) {
          tokens.push(t.ids[k]);
          rest.push(lastRest);
        }
      }
      i++;
    }
    this.stats.nodesVisited += visited;
    return {
      tokens: Int32Array.from(tokens),
      rest: Uint16Array.from(rest),
      end: m.accepting(root),
      bytes: 64 + tokens.length * 6,
    };
  }
}

export class GrammarConstraint implements TokenConstraint {
  private done = false;

  constructor(
    private readonly masker: GrammarMasker,
    private state: State,
  ) {}

  /** Fewest tokens that finish the output: one byte per token, then an end token. */
  get minTokens(): number {
    return this.done ? 0 : this.masker.matcher.minRemaining(this.state) + 1;
  }

  get complete(): boolean {
    return this.done;
  }

  mask(logits: Float32Array, remaining: number): void {
    if (this.done) throw new Error('the grammar is complete; no more tokens are allowed');
    const e = this.masker.entry(this.state);
    // After this token, remaining-1 tokens must cover the rest (one byte each) plus an end token.
    const budget = remaining - 2;
    const kept = new Float32Array(e.tokens.length);
    for (let k = 0; k < e.tokens.length; k++) kept[k] = logits[e.tokens[k]];
    const ends = this.masker.trie.vocab.endTokens;
    const endLogits = ends.map((id) => logits[id]);
    logits.fill(-Infinity);
    let allowed = 0;
    for (let k = 0; k < e.tokens.length; k++) {
      if (e.rest[k] <= budget) {
        logits[e.tokens[k]] = kept[k];
        allowed++;
      }
    }
    if (e.end) {
      ends.forEach((id, i) => {
        logits[id] = Number.isFinite(endLogits[i]) ? endLogits[i] : 0;
      });
      allowed += ends.length;
    }
    if (allowed === 0) throw new Error(`no token can finish the constrained output within ${remaining} tokens`);
  }

  accept(token: number): void {
    if (this.done) throw new Error(`token ${token} after the grammar completed`);
    if (this.masker.trie.vocab.endTokens.includes(token)) {
      if (!this.masker.matcher.accepting(this.state))
        throw new Error(`end token ${token} before the grammar completed`);
      this.done = true;
      return;
    }
    const bytes = this.masker.trie.vocab.bytes[token];
    let s = this.state;
    for (const b of bytes ?? []) s = this.masker.matcher.advance(s, b);
    if (!bytes || s.length === 0) throw new Error(`token ${token} is not allowed by the grammar here`);
    this.state = s;
  }
}
