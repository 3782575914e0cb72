// Ollama-style keep-alive durations: a number of seconds, or a Go duration string ("90s", "5m",
// "1h30m", "250ms"); 0 means "now" and any negative value means "never".

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
const NUMBER = /^[+-]?(\d+(?:\.\d*)?|\.\d+)$/;

/** Milliseconds for a duration, -1 for "never" (any negative input), or a rule text when it does not parse. */
export function parseDuration(v: unknown): { ms: number } | { rule: string } {
  const rule =
    'must be a duration: seconds as a number, or a string like "30s", "5m", "1h30m" (0 = now, negative = never)';
  if (typeof v === 'number') return Number.isFinite(v) ? fromSeconds(v) : { rule };
  if (typeof v !== 'string') return { rule };
  const s = v.trim();
  if (NUMBER.test(s)) return fromSeconds(Number(s));
  const sign = s.startsWith('-') ? -1 : 1;
  const body = s.replace(/^[+-]/, '');
  if (body === '') return { rule };
  let ms = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < body.length) {
    const at = PART.lastIndex;
    const m = PART.exec(body);
    if (!m || m.index !== at) return { rule };
    ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return sign < 0 && ms > 0 ? { ms: -1 } : { ms: Math.round(ms) };
}

function fromSeconds(seconds: number): { ms: number } {
  return { ms: seconds < 0 ? -1 : Math.round(seconds * 1000) || 0 };
}

/** A readable form of a keep-alive in ms: "never", "now", "5m", "1h30m", "1.5s". */
export function formatDuration(ms: number): string {
  if (ms < 0) return 'never';
  if (ms === 0) return 'now';
  if (ms % 1000 !== 0) return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
  let s = ms / 1000;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`;
}
