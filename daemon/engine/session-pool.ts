// A model's KV-cache sessions, kept between requests so a conversation's next turn only prefills
// its new tokens. A request gets the session sharing the longest prefix with its prompt if that
// keeps at least half of the session's cache (or covers the whole prompt); otherwise a new session
// while the pool has room (a different conversation does not wipe another's cache), else the
// least recently used. `key` (the request's prompt_cache_key) pins a conversation to its session.
// A cache computed with another LoRA adapter or routing width K shares no prefix with the request
// (keys and values depend on both), so sessions are matched on (adapter, K, prefix).
import { PrefixSession, type AdapterRef, type LogitsSource } from './prefix-cache.js';
import type { StreamStats } from '../native/binding.js';

/** An engine session (the native one, or a fake in tests). */
export interface EngineSession extends LogitsSource {
  /** Bytes held by the KV cache. */
  stateBytes(): number;
  /** The expert executor's counters (monotonic over the session's life), where the engine has them. */
  streamStats?(): StreamStats;
  dispose(): void;
}

interface Slot {
  session: PrefixSession;
  engine: EngineSession;
  inUse: boolean;
  lastUsed: number;
  key?: string;
}

export interface SessionLease {
  session: PrefixSession;
  engine: EngineSession;
  /** Why this session was picked: 'reuse' (shares a prefix), 'key', 'new' or 'evict'. */
  reason: 'reuse' | 'key' | 'new' | 'evict';
  release(): void;
}

export interface PoolStats {
  sessions: number;
  inUse: number;
  tokens: number[];
  stateBytes: number;
}

function commonPrefix(a: readonly (number | string)[], b: readonly (number | string)[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class SessionPool {
  private readonly slots: Slot[] = [];
  private tick = 0;

  constructor(
    private readonly create: () => Promise<EngineSession>,
    private readonly max: number,
    /** Tokens per prefill call, so cancellation lands between chunks. */
    private readonly prefillChunk = 256,
  ) {}

  /** Opens the first session at load, so the first request only pays for its prompt. */
  async open(): Promise<void> {
    if (this.slots.length === 0) this.add(await this.create());
  }

  /** `prompt`: the prompt's cache keys (token ids; image rows by content, see PromptImages.keys). */
  async take(
    prompt: readonly (number | string)[],
    key?: string,
    adapter: AdapterRef | null = null,
    topK: number | null = null,
  ): Promise<SessionLease> {
    const idle = this.slots.filter((s) => !s.inUse);
    let best: Slot | undefined;
    let bestLcp = -1;
    for (const s of idle) {
      const same = (s.session.adapter?.id ?? null) === (adapter?.id ?? null) && s.session.topK === topK;
      const lcp = same ? commonPrefix(s.session.tokens, prompt) : 0;
      if (lcp > bestLcp || (lcp === bestLcp && key !== undefined && s.key === key)) [best, bestLcp] = [s, lcp];
    }
    const keyed = key === undefined ? undefined : idle.find((s) => s.key === key);
    let slot: Slot;
    let reason: SessionLease['reason'];
    const cached = best?.session.tokens.length ?? 0;
    // Reuse when nothing else would be lost, the prompt is all cached (a regenerate), or at least half the cache is kept.
    if (best && (cached === 0 || bestLcp >= prompt.length - 1 || (bestLcp > 0 && bestLcp * 2 >= cached)))
      [slot, reason] = [best, 'reuse'];
    else if (keyed) [slot, reason] = [keyed, 'key'];
    else if (this.slots.length < this.max) {
      slot = this.add(await this.create());
      reason = 'new';
    } else {
      const lru = idle.sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (!lru) throw new Error('every session is in use (the model queue runs one request at a time)');
      [slot, reason] = [lru, 'evict'];
    }
    if (key !== undefined) {
      for (const s of this.slots) if (s.key === key) s.key = undefined;
      slot.key = key;
    }
    slot.inUse = true;
    slot.lastUsed = ++this.tick;
    let released = false;
    return {
      session: slot.session,
      engine: slot.engine,
      reason,
      release: () => {
        if (released) return;
        released = true;
        slot.inUse = false;
      },
    };
  }

  private add(engine: EngineSession): Slot {
    const slot: Slot = { engine, session: new PrefixSession(engine, this.prefillChunk), inUse: false, lastUsed: 0 };
    this.slots.push(slot);
    return slot;
  }

  stats(): PoolStats {
    return {
      sessions: this.slots.length,
      inUse: this.slots.filter((s) => s.inUse).length,
      tokens: this.slots.map((s) => s.session.tokens.length),
      stateBytes: this.slots.reduce((n, s) => n + s.engine.stateBytes(), 0),
    };
  }

  /** Disposes every session (the model is unloading; none may be in use). */
  clear(): void {
    for (const s of this.slots.splice(0)) s.engine.dispose();
  }
}
