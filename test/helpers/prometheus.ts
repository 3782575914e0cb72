// A strict parser for the Prometheus text exposition format (0.0.4), independent of prom-client,
// so tests check that /metrics really parses.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(\\{(.*)\\})?\\s+(\\S+)(\\s+-?\\d+)?$`);
const LABEL = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(s: string, line: number): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  // Prometheus parses values with Go's ParseFloat, which takes NaN in any case; prom-client
  // writes `Nan` (e.g. event-loop lag before its first sample).
  if (s.toLowerCase() === 'nan') return NaN;
  const v = Number(s);
  if (Number.isNaN(v)) throw new Error(`line ${line}: bad value ${JSON.stringify(s)}`);
  return v;
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest.trim() !== '') {
    const m = LABEL.exec(rest);
    if (!m) throw new Error(`line ${line}: bad labels ${JSON.stringify(text)}`);
    labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    rest = rest.slice(m[0].length);
  }
  return labels;
}

/** Parses every line; throws naming the first malformed line. */
export function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const m = new RegExp(`^# (HELP|TYPE) (${NAME})(?: (.*))?$`).exec(raw);
      if (!m) return; // plain comment
      if (m[1] === 'TYPE') {
        if (!TYPES.has(m[3] ?? '')) throw new Error(`line ${line}: unknown type ${m[3]}`);
        if (types.has(m[2]!)) throw new Error(`line ${line}: second TYPE for ${m[2]}`);
        types.set(m[2]!, m[3]!);
      }
      return;
    }
    const m = SAMPLE.exec(raw);
    if (!m) throw new Error(`line ${line}: not a sample: ${JSON.stringify(raw)}`);
    samples.push({ name: m[1]!, labels: m[3] ? parseLabels(m[3], line) : {}, value: parseValue(m[4]!, line) });
  });
  return { samples, types };
}
