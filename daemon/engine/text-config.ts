// What a model folder says about text: stop tokens (eos_token_id may be a list, in
// generation_config.json and config.json; eos_token in tokenizer_config.json), sampling defaults
// (generation_config.json) and the chat template (chat_template.jinja or tokenizer_config.json).
import { join } from 'node:path';
import { ChatTemplate } from './chat-template.js';
import { isRecord } from '../../robot/common/validation/values.js';
import type { SamplingParams } from './sampler.js';
import { TextTokenizer, TokenizerLoadError, readJson, readModelText } from './tokenizer.js';

export interface TextModel {
  tokenizer: TextTokenizer;
  template: ChatTemplate;
  /** Sampling a stop token ends the output (the token is not part of the text). */
  stopTokens: ReadonlySet<number>;
  samplingDefaults: Partial<SamplingParams>;
  /** Context length the model declares, if any. */
  maxContext?: number;
}

/** Loads the tokenizer, template, stop tokens and sampling defaults of a model folder. */
export async function loadTextModel(dir: string): Promise<TextModel> {
  const tokenizer = await TextTokenizer.fromDir(dir);
  const tokConfig = asRecord(await readJson(join(dir, 'tokenizer_config.json')));
  const genConfig = asRecord(await readJson(join(dir, 'generation_config.json')));
  const config = asRecord(await readJson(join(dir, 'config.json')));
  const sources = new Map<string, string>();
  const jinja = await readModelText(join(dir, 'chat_template.jinja'));
  if (jinja !== undefined) sources.set('default', jinja);
  const ct = tokConfig.chat_template;
  if (typeof ct === 'string' && !sources.has('default')) sources.set('default', ct);
  if (Array.isArray(ct)) {
    for (const entry of ct) {
      if (
        isRecord(entry) &&
        typeof entry.name === 'string' &&
        typeof entry.template === 'string' &&
        !sources.has(entry.name)
      ) {
        sources.set(entry.name, entry.template);
      }
    }
  }
  const bos = tokenText(tokConfig.bos_token);
  const eos = tokenText(tokConfig.eos_token);
  const template = new ChatTemplate(sources, { bos_token: bos, eos_token: eos });
  const stops = new Set<number>();
  // Every special token id must name a token of this tokenizer (eos ids also stop generation).
  for (const [file, json] of [
    ['generation_config.json', genConfig],
    ['config.json', config],
  ] as const) {
    for (const key of ['eos_token_id', 'bos_token_id', 'pad_token_id'] as const) {
      const v = json[key];
      for (const id of v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]) {
        if (!Number.isInteger(id) || id < 0 || id >= tokenizer.vocabSize) {
          throw new TokenizerLoadError(
            `${join(dir, file)}: ${key} ${JSON.stringify(id)} is not a token id below ${tokenizer.vocabSize}`,
          );
        }
        if (key === 'eos_token_id') stops.add(id);
      }
    }
  }
  if (eos !== undefined) {
    const id = tokenizer.idOf(eos);
    if (id !== undefined) stops.add(id);
  }
  const maxContext = [config.max_position_embeddings, tokConfig.model_max_length].find(
    (v): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0 && v < 1e8,
  );
  return { tokenizer, template, stopTokens: stops, samplingDefaults: samplingDefaults(genConfig), maxContext };
}

// Like vLLM, only the sampling values are read (do_sample is not: an API request always samples
// unless its temperature is 0).
function samplingDefaults(g: Record<string, unknown>): Partial<SamplingParams> {
  const out: Partial<SamplingParams> = {};
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  if (num(g.temperature) !== undefined) out.temperature = num(g.temperature);
  if (num(g.top_k) !== undefined) out.topK = num(g.top_k);
  if (num(g.top_p) !== undefined) out.topP = num(g.top_p);
  if (num(g.min_p) !== undefined) out.minP = num(g.min_p);
  if (num(g.repetition_penalty) !== undefined) out.repetitionPenalty = num(g.repetition_penalty);
  return out;
}

function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (isRecord(v) && typeof v.content === 'string') return v.content;
  return undefined;
}

function asRecord(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}
