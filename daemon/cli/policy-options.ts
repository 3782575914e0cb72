// Options `policy run` and `policy eval` share: the provider (a script is read here and sent)
// and positive integer budgets.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { formatIssue, type Issue } from '../../robot/common/validation/issue.js';
import { providerParams, type ProviderParams } from '../policy/episode/provider-spec.js';
import { CliError } from './exit.js';

/** The provider options of `policy run` and `policy eval`. */
export interface ProviderOptions {
  provider: 'scripted' | 'openai' | 'local';
  script?: string;
  baseUrl?: string;
  model?: string;
  apiKeyEnv?: string;
}

export const positive = (flag: string, v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`${flag}: must be a positive integer, got ${JSON.stringify(v)}`, 2);
  return n;
};

/** Adds --provider, --script, --base-url, --model and --api-key-env. */
export function withProviderOptions(c: Command): Command {
  return c
    .option('-p, --provider <kind>', 'scripted, openai or local', 'scripted')
    .option('--script <file>', 'scripted: JSONL file of decisions')
    .option('--base-url <url>', 'openai: API root up to and including /v1')
    .option('--model <name>', 'openai: model name; local: served model')
    .option('--api-key-env <var>', "openai: the daemon's environment variable holding the key");
}

/** The provider options as policy.start's `provider`, checked here too (policy eval starts episodes itself). */
export function providerOf(o: ProviderOptions): ProviderParams {
  const raw = rawProvider(o);
  const issues: Issue[] = [];
  const checked = providerParams.check(raw, 'provider', issues);
  if (!checked || issues.length) throw new CliError(issues.map((i) => formatIssue(i)).join('; '), 2);
  return checked;
}

function rawProvider(o: ProviderOptions): Record<string, unknown> {
  if (o.provider === 'scripted') {
    if (!o.script) throw new CliError('--script: is required with --provider scripted', 2);
    let text: string;
    try {
      text = readFileSync(o.script, 'utf8');
    } catch (e) {
      throw new CliError(`--script: cannot read ${o.script} (${(e as NodeJS.ErrnoException).code})`, 2);
    }
    return { kind: 'scripted', lines: text.split(/\r?\n/) };
  }
  if (o.provider === 'openai')
    return {
      kind: 'openai',
      base_url: o.baseUrl,
      model: o.model,
      ...(o.apiKeyEnv ? { api_key_env: o.apiKeyEnv } : {}),
    };
  return { kind: 'local', model: o.model };
}
