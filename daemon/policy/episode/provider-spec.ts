// How policy.start names a provider (`provider: {kind, ...}`) and a completion check, as checked
// params, and the provider and check they build.
import {
  int,
  list,
  obj,
  oneOf,
  optional,
  str,
  type Infer,
  type Node,
} from '../../../robot/common/validation/builders.js';
import type { Issue } from '../../../robot/common/validation/issue.js';
import type { ChatService } from '../../engine/chat-service.js';
import { LocalProvider } from '../providers/local.js';
import { keyRefusal, parseGrants } from '../providers/api-key-grants.js';
import { OpenAiProvider } from '../providers/openai.js';
import { baseUrlProblem, redactUrl } from '../providers/provider-url.js';
import { parseScript, ScriptedProvider } from '../providers/scripted.js';
import type { PolicyProvider } from '../providers/types.js';
import type { CheckSpec } from './checks.js';

const FIELDS_BY_KIND: Record<string, string[]> = {
  scripted: ['lines'],
  openai: [
    'base_url',
    'model',
    'api_key_env',
    'timeout_ms',
    'max_retries',
    'max_response_bytes',
    'context_tokens',
    'images',
  ],
  local: ['model', 'experts_per_token'],
};

export const providerParams = obj(
  {
    kind: oneOf(['scripted', 'openai', 'local'], { doc: 'where the model runs' }),
    lines: optional(
      list(str(), {
        maxItems: 100_000,
        doc: 'scripted: the JSONL lines themselves (the CLI sends its --script file so)',
      }),
    ),
    base_url: optional(
      str({
        nonEmpty: true,
        doc: 'openai: the API root up to and including /v1 (http or https; no user name, password, query or fragment)',
      }),
    ),
    model: optional(
      str({ nonEmpty: true, doc: 'openai: the model name; local: a served model (name or name:adapter)' }),
    ),
    api_key_env: optional(
      str({ nonEmpty: true, doc: "openai: the daemon's environment variable holding the API key" }),
    ),
    timeout_ms: optional(int({ min: 1, max: 3_600_000, doc: 'openai: longest wait for one answer' })),
    max_retries: optional(int({ min: 0, max: 100, doc: 'openai: retries on 429/5xx/timeouts' })),
    max_response_bytes: optional(
      int({
        min: 1024,
        max: 268_435_456,
        doc: 'openai: largest answer read (default 16 MiB); a larger one fails the decision, not retried',
      }),
    ),
    // 1024 of them stay free for the reply (compileHistory): a smaller context fails every decision.
    context_tokens: optional(
      int({ min: 2048, doc: "openai: the model's context, for the history policy (1024 stay free for the reply)" }),
    ),
    images: optional(oneOf(['url', 'text'], { doc: 'openai: text = images as placeholders' })),
    experts_per_token: optional(
      int({
        min: 1,
        max: 1024,
        doc: "local: routing width K each decision runs at (1..the model's K; default the model's), without a reload",
      }),
    ),
  },
  {
    doc: 'the model: {kind: scripted, lines}, {kind: openai, base_url, model, ...} or {kind: local, model}',
    refine: (v, path, issues) => {
      const allowed = FIELDS_BY_KIND[v.kind]!;
      for (const [k, value] of Object.entries(v))
        if (k !== 'kind' && value !== undefined && !allowed.includes(k))
          issues.push({
            path: `${path}.${k}`,
            rule: `is not an option of the ${v.kind} provider (${allowed.join(', ')})`,
            value,
          });
      const need = (k: string, why: string) => {
        if ((v as Record<string, unknown>)[k] === undefined)
          issues.push({ path: `${path}.${k}`, rule: `is required ${why}`, value: undefined });
      };
      if (v.kind === 'scripted') need('lines', 'for the scripted provider');
      // The value shown redacted: a rejected URL may hold the key.
      const urlProblem = v.base_url === undefined ? null : baseUrlProblem(v.base_url);
      if (urlProblem) issues.push({ path: `${path}.base_url`, rule: urlProblem, value: redactUrl(v.base_url!) });
      if (v.kind === 'openai') {
        need('base_url', 'for the openai provider');
        need('model', 'for the openai provider');
      }
      if (v.kind === 'local') need('model', 'for the local provider');
    },
  },
);
export type ProviderParams = Infer<typeof providerParams>;

export const checkParams: Node<{
  kind: 'none' | 'operator' | 'scene' | 'verifier';
  task?: string;
  predicates?: string[];
  provider?: ProviderParams;
}> = obj(
  {
    kind: oneOf(['none', 'operator', 'scene', 'verifier'] as const, {
      default: 'none',
      doc: 'the completion check of a done',
    }),
    task: optional(str({ nonEmpty: true, doc: "scene: the scene's task whose predicates must hold" })),
    predicates: optional(
      list(str({ nonEmpty: true }), { minItems: 1, doc: 'scene: instead of a task, the predicates that must hold' }),
    ),
    provider: optional(providerParams),
  },
  {
    doc: 'completion check: none, operator (policy.confirm), scene {task | predicates}, verifier {provider}',
    refine: (v, path, issues: Issue[]) => {
      if (v.provider?.experts_per_token !== undefined)
        issues.push({
          path: `${path}.provider.experts_per_token`,
          rule: "is not for the verifier, which runs at the model's full routing width",
          value: v.provider.experts_per_token,
        });
      if ((v.kind === 'verifier') !== (v.provider !== undefined))
        issues.push({
          path: `${path}.provider`,
          rule: 'is required for, and only for, the verifier check',
          value: v.provider,
        });
      for (const k of ['task', 'predicates'] as const)
        if (v[k] !== undefined && v.kind !== 'scene')
          issues.push({ path: `${path}.${k}`, rule: 'is only for the scene check', value: v[k] });
      if (v.kind === 'scene' && (v.task === undefined) === (v.predicates === undefined))
        issues.push({
          path: `${path}.task`,
          rule: 'the scene check needs a task (or a list of predicates instead), not both',
          value: v.task,
        });
    },
  },
);
export type CheckParams = Infer<typeof checkParams>;

export interface ProviderContext {
  chat: ChatService;
  /** The episode id: the local provider's prompt cache key. */
  episode: string;
  /** Environment variables an openai provider may name (policy.api_key_envs). */
  apiKeyEnvs: readonly string[];
  name?: string;
}

export async function makeProvider(p: ProviderParams, c: ProviderContext): Promise<PolicyProvider> {
  const name = c.name ?? p.kind;
  switch (p.kind) {
    case 'scripted':
      return new ScriptedProvider('script', parseScript(p.lines!.join('\n'), 'script', name), { name });
    case 'openai': {
      // The daemon sends that variable's value to base_url: only variables, and URLs, the config allows.
      const refused =
        p.api_key_env === undefined ? null : keyRefusal(parseGrants(c.apiKeyEnvs), p.api_key_env, p.base_url!);
      if (refused) throw new Error(`provider.api_key_env: ${refused}`);
      return new OpenAiProvider({
        name,
        baseUrl: p.base_url!,
        model: p.model!,
        ...(p.api_key_env ? { apiKeyEnv: p.api_key_env } : {}),
        ...(p.timeout_ms ? { timeoutMs: p.timeout_ms } : {}),
        ...(p.max_retries !== undefined ? { retry: { maxRetries: p.max_retries } } : {}),
        ...(p.max_response_bytes ? { maxResponseBytes: p.max_response_bytes } : {}),
        ...(p.context_tokens ? { contextTokens: p.context_tokens } : {}),
        ...(p.images ? { images: p.images } : {}),
      });
    }
    case 'local':
      // A model the daemon does not serve is refused now, not at the first decision.
      try {
        c.chat.inputsOf(p.model);
      } catch (err) {
        throw new Error(`provider.model: ${(err as Error).message}`);
      }
      return new LocalProvider({
        name,
        chat: c.chat,
        model: p.model!,
        cacheKey: c.episode,
        ...(p.experts_per_token !== undefined ? { expertsPerToken: p.experts_per_token } : {}),
      });
  }
}

export async function makeCheck(p: CheckParams | undefined, c: ProviderContext): Promise<CheckSpec> {
  switch (p?.kind ?? 'none') {
    case 'verifier':
      return {
        kind: 'verifier',
        provider: await makeProvider(p!.provider!, {
          ...c,
          episode: `${c.episode}-verifier`,
          name: `verifier-${p!.provider!.kind}`,
        }),
      };
    case 'scene':
      return {
        kind: 'scene',
        ...(p?.task ? { task: p.task } : {}),
        ...(p?.predicates ? { predicates: p.predicates } : {}),
      };
    default:
      return { kind: (p?.kind ?? 'none') as 'none' | 'operator' };
  }
}
