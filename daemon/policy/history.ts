// The history policy: an episode's turns → the prompt for the next decision. References (the
// instruction, goal images, demonstration keyframes) are always sent whole; only the newest N
// online images are; turns older than the window become one deterministic host summary; and the
// prompt is kept inside the model's context by summarising more turns, oldest first. Everything
// dropped is reported.
import { imagePlaceholder } from './providers/openai-format.js';
import type { ContentPart, PolicyMessage, TokenCounter } from './providers/types.js';
import { DEFAULT_IMAGE_TOKENS, estimateTokens } from './tokens.js';
import type { PolicyTool } from './tools.js';

/** One online exchange: what the model was shown, its reply, and what came of the reply. */
export interface Turn {
  /** Observation text, online images, operator feedback (marked as such by the loop). */
  observation: ContentPart[];
  /** The decision; absent on the current turn, which awaits it. */
  reply?: PolicyMessage & { role: 'assistant' };
  result?: TurnResult;
}

export interface TurnResult {
  /** The tool called; null when the reply was not a valid call. */
  tool: string | null;
  /** The outcome's status, e.g. ok, rejected, failed, blocked. */
  status: string;
  /** What the model is told. */
  text: string;
}

export interface EpisodeHistory {
  system: string;
  /** The first user turn's content: instruction and references, never trimmed. */
  references: ContentPart[];
  turns: readonly Turn[];
}

export interface HistoryOptions {
  tools: readonly PolicyTool[];
  /** Online images sent as images, newest first; older ones become a placeholder naming them. */
  keepImages: number;
  /** Turns sent verbatim (the current one included); older ones are summarised. */
  windowTurns: number;
  /** Turns go into the summary this many at a time (default 1): the prompt after the references
   *  then changes once per block rather than every decision, so a prefix cache stays warm between. */
  summaryBlock?: number;
  /** The model's context (prompt + reply); absent: no token bound. */
  contextTokens?: number;
  /** Tokens left free for the reply (default 1024). */
  reserveTokens?: number;
  /** Exact counter (the local model's); default the chars/4 estimate with imageTokens per image. */
  count?: TokenCounter;
  imageTokens?: number;
}

export interface CompiledPrompt {
  messages: PolicyMessage[];
  /** The prompt's tokens as `count` (or the estimate) puts them. */
  tokens: number;
  /** Of the whole episode, summarised turns included. */
  counts: { turns: number; decisions: number };
  /** The host summary of the older turns (null when none is summarised). */
  summary: string | null;
  dropped: {
    /** Turns replaced by the summary: by the window, and beyond it to fit the context. */
    summarisedTurns: number;
    trimmedForContext: number;
    /** Labels of online images not sent, oldest first. */
    images: string[];
  };
}

/** The references, the current observation and the reply reserve do not fit the context. */
export class HistoryBudgetError extends Error {
  constructor(
    readonly tokens: number,
    readonly budget: number,
  ) {
    super(
      `the prompt needs ${tokens} tokens with only the references and the current observation; ` +
        `the context leaves ${budget} for it (fewer or smaller references, or a model with a longer context)`,
    );
    this.name = 'HistoryBudgetError';
  }
}

const LAST_OUTCOME_CHARS = 300;

export function compileHistory(h: EpisodeHistory, o: HistoryOptions): CompiledPrompt {
  const count = o.count ?? ((m, t) => estimateTokens(m, t, o.imageTokens ?? DEFAULT_IMAGE_TOKENS));
  const budget = o.contextTokens === undefined ? Infinity : o.contextTokens - (o.reserveTokens ?? 1024);
  const n = h.turns.length;
  const block = Math.max(1, o.summaryBlock ?? 1);
  const last = Math.max(0, n - 1);
  // Summarised turns are a whole number of blocks (never the current turn): between blocks the
  // window holds windowTurns − block + 1 to windowTurns turns.
  const blocks = (turns: number) => Math.min(last, Math.ceil(turns / block) * block);
  const windowStart = blocks(Math.max(0, n - Math.max(1, o.windowTurns)));
  const attempt = (start: number, keep: number) => {
    const built = build(h, start, keep);
    const tokens = count(built.messages, o.tools);
    const prompt: CompiledPrompt = {
      messages: built.messages,
      tokens,
      counts: { turns: n, decisions: h.turns.filter((t) => t.reply).length },
      summary: built.summary,
      dropped: { summarisedTurns: start, trimmedForContext: start - windowStart, images: built.droppedImages },
    };
    return tokens <= budget ? prompt : null;
  };
  const keep = Math.max(0, o.keepImages);
  const whole = attempt(windowStart, keep);
  if (whole) return whole;
  // Oldest first: the fewest more blocks into the summary (a binary search: fewer turns, fewer
  // tokens), and when even the last turn alone is too long, its images too.
  let best = attempt(last, keep);
  if (!best) {
    for (let k = keep - 1; k >= 0 && !best; k--) best = attempt(last, k);
    if (!best) throw new HistoryBudgetError(count(build(h, last, 0).messages, o.tools), budget);
    return best;
  }
  // Where the summary may end: whole blocks past the window's start, or the last turn.
  const starts: number[] = [];
  for (let s = windowStart - (windowStart % block) + block; s < last; s += block) starts.push(s);
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const p = attempt(starts[mid]!, keep);
    if (p) {
      best = p;
      hi = mid;
    } else lo = mid + 1;
  }
  return best;
}

/** The prompt with turns [0, start) summarised and only the newest `keep` online images of the rest. */
function build(h: EpisodeHistory, start: number, keep: number) {
  const droppedImages: string[] = [];
  for (const t of h.turns.slice(0, start))
    for (const p of t.observation) if (p.type === 'image') droppedImages.push(p.label);
  const kept = h.turns.slice(start);
  // Which image parts of the kept turns stay: the last `keep` in order of arrival.
  const images = kept.flatMap((t) => t.observation.filter((p) => p.type === 'image'));
  const shown = new Set(images.slice(Math.max(0, images.length - keep)));
  const summary = start > 0 ? summarise(h.turns.slice(0, start)) : null;
  const messages: PolicyMessage[] = [{ role: 'system', text: h.system }];
  let pending: ContentPart[] = [...h.references];
  if (summary) pending.push({ type: 'text', text: summary });
  for (const t of kept) {
    const observation = t.observation.map((p): ContentPart => {
      if (p.type === 'text' || shown.has(p)) return p;
      droppedImages.push(p.label);
      return { type: 'text', text: imagePlaceholder(p.label) };
    });
    // One user message per turn: what is pending (references, a rejection) leads the observation.
    messages.push({ role: 'user', content: [...pending, ...observation] });
    pending = [];
    if (!t.reply) continue;
    messages.push(t.reply);
    const call = t.reply.toolCall;
    const text = t.result?.text ?? 'No outcome was recorded for this call.';
    if (call) messages.push({ role: 'tool', toolCallId: call.id, name: call.name, text });
    else pending.push({ type: 'text', text });
  }
  if (pending.length) messages.push({ role: 'user', content: pending });
  return { messages, summary, droppedImages };
}

/** The host's account of summarised turns: the same turns always give the same text. */
export function summarise(turns: readonly Turn[]): string {
  const tools = new Map<string, number>();
  const statuses = new Map<string, number>();
  let decisions = 0;
  let last: { index: number; result: TurnResult } | undefined;
  turns.forEach((t, i) => {
    if (t.reply) decisions++;
    if (!t.result) return;
    const tool = t.result.tool ?? 'no valid call';
    tools.set(tool, (tools.get(tool) ?? 0) + 1);
    statuses.set(t.result.status, (statuses.get(t.result.status) ?? 0) + 1);
    last = { index: i + 1, result: t.result };
  });
  const list = (m: Map<string, number>) =>
    [...m]
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k} ×${v}`)
      .join(', ') || 'none';
  const parts = [
    `Host summary of turns 1–${turns.length} (their images and full text are no longer shown): ` +
      `${decisions} decision${decisions === 1 ? '' : 's'}; tools called: ${list(tools)}; outcomes: ${list(statuses)}.`,
  ];
  if (last) {
    const r = last.result;
    const text = r.text.length > LAST_OUTCOME_CHARS ? `${r.text.slice(0, LAST_OUTCOME_CHARS - 1)}…` : r.text;
    parts.push(`Last summarised outcome (turn ${last.index}, ${r.tool ?? 'no valid call'}, ${r.status}): ${text}`);
  }
  return parts.join('\n');
}
