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
  expertsPerToken?: string;
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
    .option('--api-key-env <var>', "openai: the daemon's environment variable holding the key")
    .option(
      '--experts-per-token <k>',
      "local: routing width K of the episode's decisions (the verifier runs at full K)",
    );
}

/** The verifier check's provider options: --verifier-provider etc., each defaulting to the episode's. */
export interface VerifierOptions {
  verifierProvider?: ProviderOptions['provider'];
  verifierScript?: string;
  verifierBaseUrl?: string;
  verifierModel?: string;
  verifierApiKeyEnv?: string;
}

export function withVerifierOptions(c: Command): Command {
  return c
    .option('--verifier-provider <kind>', "verifier: scripted, openai or local (default: the episode's --provider)")
    .option('--verifier-script <file>', 'verifier: JSONL file of verdicts (scripted)')
    .option('--verifier-base-url <url>', "verifier: API root (default: the episode's --base-url)")
    .option('--verifier-model <name>', "verifier: model (default: the episode's --model)")
    .option('--verifier-api-key-env <var>', "verifier: key variable (default: the episode's --api-key-env)");
}

/** Whether any --verifier-* option was given. */
export const verifierGiven = (o: VerifierOptions): boolean =>
  [o.verifierProvider, o.verifierScript, o.verifierBaseUrl, o.verifierModel, o.verifierApiKeyEnv].some(
    (v) => v !== undefined,
  );

/** The verifier's provider: its own options over the episode's (never the episode's script). */
export function verifierProviderOf(o: ProviderOptions & VerifierOptions): ProviderParams {
  const own = (flag: string, v: string | undefined) => (v === undefined ? {} : { [flag]: v });
  const p = providerOf(
    {
      provider: o.verifierProvider ?? o.provider,
      ...own('script', o.verifierScript),
      ...own('baseUrl', o.verifierBaseUrl ?? o.baseUrl),
      ...own('model', o.verifierModel ?? o.model),
      ...own('apiKeyEnv', o.verifierApiKeyEnv ?? o.apiKeyEnv),
    },
    '--verifier-',
  );
  return p;
}

/** The provider options as policy.start's `provider`, checked here too (policy eval starts episodes itself). */
export function providerOf(o: ProviderOptions, flags = '--'): ProviderParams {
  const raw = rawProvider(o, flags);
  const issues: Issue[] = [];
  const checked = providerParams.check(raw, 'provider', issues);
  if (!checked || issues.length) throw new CliError(issues.map((i) => formatIssue(i)).join('; '), 2);
  return checked;
}

const PROVIDERS = ['scripted', 'openai', 'local'];

function rawProvider(o: ProviderOptions, flags: string): Record<string, unknown> {
  if (o.provider !== undefined && !PROVIDERS.includes(o.provider))
    throw new CliError(
      `${flags}provider: must be one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(o.provider)}`,
      2,
    );
  if (o.provider === 'scripted') {
    if (!o.script) throw new CliError(`${flags}script: is required with ${flags}provider scripted`, 2);
    let text: string;
    try {
      text = readFileSync(o.script, 'utf8');
    } catch (e) {
      throw new CliError(`${flags}script: cannot read ${o.script} (${(e as NodeJS.ErrnoException).code})`, 2);
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
  return {
    kind: 'local',
    model: o.model,
    ...(o.expertsPerToken !== undefined ? { experts_per_token: Number(o.expertsPerToken) } : {}),
  };
}
