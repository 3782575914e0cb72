// The `scripted` provider: replays decisions from a JSONL file, one per line, for tests and demos.
// A line is a tool call {"name", "arguments"} (arguments as an object, or as a string sent as-is to
// emulate broken JSON), {"raw": "text"} or a JSON string (output as the model's text, malformed
// or not). Blank lines are skipped; every other problem names the file and line.
import { readFile } from 'node:fs/promises';
import { parseStrictJson } from '../../../robot/tools/strict-json.js';
import { isRecord, showValue } from '../../../robot/common/validation/values.js';
import { CHARS_PER_TOKEN, estimateTokens } from '../tokens.js';
import { decisionOf, rawText, type Reply } from './openai-format.js';
import { type Decision, type DecisionRequest, type PolicyProvider, ProviderError } from './types.js';

export type ScriptEntry =
  | { line: number; kind: 'call'; name: string; arguments: string; id?: string }
  | { line: number; kind: 'raw'; text: string };

export interface ScriptedProviderOptions {
  /** Provider name in decisions and errors (default 'scripted'). */
  name?: string;
  /** ms clock for timings (default performance.now). */
  clock?: () => number;
}

const SHAPES = '{"name": "<tool>", "arguments": {...}}, {"raw": "<text>"} or a JSON string';

/** Parses a script; `file` names it in errors. Throws a ProviderError of kind 'script'. */
export function parseScript(text: string, file: string, provider = 'scripted'): ScriptEntry[] {
  const entries: ScriptEntry[] = [];
  const fail = (line: number, why: string) => new ProviderError(provider, 'script', `${file}:${line}: ${why}`);
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const src = lines[i]!;
    if (src.trim() === '') continue;
    const r = parseStrictJson(src);
    if (!r.ok) throw fail(line, `not JSON: ${r.error}`);
    const v = r.value;
    if (typeof v === 'string') {
      entries.push({ line, kind: 'raw', text: v });
      continue;
    }
    if (!isRecord(v)) throw fail(line, `expected ${SHAPES}, got ${showValue(v)}`);
    const keys = Object.keys(v);
    if ('raw' in v) {
      if (typeof v.raw !== 'string' || keys.length > 1)
        throw fail(line, `raw: must be the only key, with a string value, got ${showValue(v)}`);
      entries.push({ line, kind: 'raw', text: v.raw });
      continue;
    }
    const extra = keys.find((k) => !['name', 'arguments', 'id'].includes(k));
    if (extra !== undefined) throw fail(line, `unknown key ${JSON.stringify(extra)}; expected ${SHAPES}`);
    if (typeof v.name !== 'string' || v.name === '')
      throw fail(line, `name: must be the tool name as a non-empty string, got ${showValue(v.name)}`);
    if (v.id !== undefined && typeof v.id !== 'string')
      throw fail(line, `id: must be a string, got ${showValue(v.id)}`);
    const args =
      v.arguments === undefined ? '{}' : typeof v.arguments === 'string' ? v.arguments : JSON.stringify(v.arguments);
    entries.push({
      line,
      kind: 'call',
      name: v.name,
      arguments: args,
      ...(v.id !== undefined ? { id: v.id as string } : {}),
    });
  }
  if (entries.length === 0) throw new ProviderError(provider, 'script', `${file}: no decisions in the file`);
  return entries;
}

export class ScriptedProvider implements PolicyProvider {
  readonly name: string;
  private next = 0;
  private readonly clock: () => number;

  constructor(
    readonly file: string,
    private readonly entries: readonly ScriptEntry[],
    o: ScriptedProviderOptions = {},
  ) {
    this.name = o.name ?? 'scripted';
    this.clock = o.clock ?? (() => performance.now());
  }

  /** Reads and checks the whole script up front: a bad line fails the start, not decision 7. */
  static async load(file: string, o: ScriptedProviderOptions = {}): Promise<ScriptedProvider> {
    const name = o.name ?? 'scripted';
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      throw new ProviderError(
        name,
        'script',
        `${file}: cannot read the script (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
    return new ScriptedProvider(file, parseScript(text, file, name), o);
  }

  /** Decisions not yet replayed. */
  get remaining(): number {
    return this.entries.length - this.next;
  }

  async decide(req: DecisionRequest, signal: AbortSignal): Promise<Decision> {
    const started = this.clock();
    if (signal.aborted) throw new ProviderError(this.name, 'aborted', 'cancelled', { attempts: 0 });
    const e = this.entries[this.next];
    if (!e)
      throw new ProviderError(
        this.name,
        'script',
        `${this.file}: all ${this.entries.length} decisions are used; the episode asked for decision ${this.next + 1}`,
      );
    this.next++;
    const reply: Reply =
      e.kind === 'raw'
        ? { content: e.text, toolCalls: [], finishReason: 'stop' }
        : {
            content: '',
            toolCalls: [{ id: e.id ?? `call_script_${e.line}`, name: e.name, arguments: e.arguments }],
            finishReason: 'tool_calls',
          };
    const d = decisionOf(
      { provider: this.name, model: this.file },
      reply,
      { promptTokens: estimateTokens(req.messages, req.tools), completionTokens: 0, estimated: true },
      { totalMs: 0, attempts: 1 },
      () => `call_script_${e.line}`,
    );
    d.usage.completionTokens = Math.ceil(rawText(reply.content, reply.toolCalls).length / CHARS_PER_TOKEN);
    d.timing.totalMs = this.clock() - started;
    return d;
  }
}
