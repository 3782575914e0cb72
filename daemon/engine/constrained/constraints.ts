// Per-model factory of token constraints: a forced Hermes tool call over a set of tools, or a
// JSON value for a response schema. Grammars (with their mask caches) are kept per signature, so
// an agent loop that sends the same tools every step pays for each mask once.
import type { Schema } from '../json-schema/schema.js';
import type { TextTokenizer } from '../tokenizer.js';
import type { ToolDef } from '../tool-calls/tools.js';
import { GrammarBuilder, GrammarError, type Node } from './grammar.js';
import { type GrammarConstraint, GrammarMasker } from './token-masker.js';
import { TokenTrie } from './token-trie.js';

export class ConstraintFactory {
  private trie: TokenTrie | undefined;
  private readonly maskers = new Map<string, GrammarMasker>();

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly endTokens: ReadonlySet<number>,
    private readonly maxGrammars = 16,
  ) {}

  /** The output must be exactly one `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`. */
  toolCall(tools: readonly ToolDef[]): GrammarConstraint {
    const signature = JSON.stringify(['tools', tools.map((t) => [t.name, t.openai.function.parameters])]);
    return this.masker(signature, (b) =>
      b.seq([
        b.lit('<tool_call>\n{"name": '),
        b.alt(
          tools.map((t) =>
            b.seq([
              b.lit(`${JSON.stringify(t.name)}, "arguments": `),
              b.schema(t.schema, `tools.${t.name}.parameters`),
            ]),
          ),
        ),
        b.lit('}\n</tool_call>'),
      ]),
    ).start();
  }

  /** The output must be one JSON value valid against `schema` (`raw` is its source, for the cache key). */
  json(schema: Schema, raw: unknown): GrammarConstraint {
    return this.masker(JSON.stringify(['json', raw]), (b) => b.schema(schema)).start();
  }

  private masker(signature: string, build: (b: GrammarBuilder) => Node): GrammarMasker {
    const hit = this.maskers.get(signature);
    if (hit) {
      this.maskers.delete(signature);
      this.maskers.set(signature, hit);
      return hit;
    }
    const masker = new GrammarMasker(this.vocabTrie(), build(new GrammarBuilder()));
    this.maskers.set(signature, masker);
    if (this.maskers.size > this.maxGrammars) this.maskers.delete(this.maskers.keys().next().value!);
    return masker;
  }

  private vocabTrie(): TokenTrie {
    if (this.trie) return this.trie;
    if (!this.tokenizer.byteLevel)
      throw new GrammarError(
        '$',
        "constrained decoding needs a byte-level BPE tokenizer (this model's tokenizer.json has no ByteLevel decoder)",
      );
    const bytes = this.tokenizer.allBytes().map((b, id) => (this.tokenizer.isSpecial(id) ? null : b));
    this.trie = new TokenTrie({ bytes, endTokens: [...this.endTokens] });
    return this.trie;
  }
}
