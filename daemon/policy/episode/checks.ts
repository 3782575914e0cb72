// Completion checks: a `done` is a claim; before an episode ends as done the configured check
// confirms it. none: nothing to confirm. operator: a person answers with policy.confirm.
// scene: the simulator's success predicates. verifier: a separate model call that may only
// answer with the `verdict` tool.
import { checkLoopToolArguments, type PolicyTool } from '../tools.js';
import type { ContentPart, PolicyProvider } from '../providers/types.js';
import type { SceneTruth } from './types.js';

export type CheckSpec =
  | { kind: 'none' }
  | { kind: 'operator' }
  | { kind: 'scene'; predicates?: string[] }
  | { kind: 'verifier'; provider: PolicyProvider };

export interface CheckResult {
  complete: boolean;
  reason: string;
  /** scene: the predicates read. */
  predicates?: Record<string, boolean>;
}

export interface CheckInput {
  robot: string;
  instruction: string;
  summary: string;
  /** The observation at the time of the claim (text, current frames). */
  observation: ContentPart[];
  /** The episode's references (goal images, demonstrations), shown to a verifier before the observation. */
  references: ContentPart[];
  /** Resolves with the operator's answer (operator check). */
  operator: (signal: AbortSignal) => Promise<CheckResult>;
  scene: SceneTruth;
  signal: AbortSignal;
}

/** The `done` tool's description: what is true of the configured check, and nothing else. */
export function doneDescription(check: CheckSpec): string {
  const lead = 'Claim the task is complete, with a summary of the evidence.';
  switch (check.kind) {
    case 'none':
      return `${lead} No check follows: the episode ends as done.`;
    case 'operator':
      return `${lead} An operator confirms or rejects the claim; a rejection comes back with the reason and the task continues.`;
    case 'scene':
      return `${lead} The scene's success conditions${check.predicates?.length ? ` (${check.predicates.join(', ')})` : ''} are checked; if they do not hold, the reason comes back and the task continues.`;
    case 'verifier':
      return `${lead} A separate model compares the current camera images and state with the instruction; a rejection comes back with its reason and the task continues.`;
  }
}

export const VERDICT_TOOL: PolicyTool = {
  name: 'verdict',
  description: 'Say whether the task is complete, with the reason.',
  parameters: {
    type: 'object',
    properties: { complete: { type: 'boolean' }, reason: { type: 'string', minLength: 1, maxLength: 2000 } },
    required: ['complete', 'reason'],
    additionalProperties: false,
  },
};

/** Scene predicates: all true, or the named ones; the reason names those that are false. */
export async function sceneVerdict(
  spec: { predicates?: string[] },
  truth: SceneTruth,
  robot: string,
): Promise<CheckResult> {
  const scene = await truth.predicates(robot);
  if (!scene) return { complete: false, reason: `robot ${robot} has no simulated scene to check` };
  if (scene.problem) return { complete: false, reason: scene.problem };
  const all = scene.predicates;
  const names = spec.predicates?.length ? spec.predicates : Object.keys(all);
  const unknown = names.filter((n) => !(n in all));
  if (unknown.length)
    return {
      complete: false,
      reason: `the scene has no predicate ${unknown.join(', ')} (it has: ${Object.keys(all).join(', ') || 'none'})`,
      predicates: all,
    };
  if (names.length === 0)
    return { complete: false, reason: 'the scene defines no success predicates', predicates: all };
  const failing = names.filter((n) => !all[n]);
  return failing.length
    ? { complete: false, reason: `not yet true in the scene: ${failing.join(', ')}`, predicates: all }
    : { complete: true, reason: `true in the scene: ${names.join(', ')}`, predicates: all };
}

export async function runCheck(spec: CheckSpec, i: CheckInput): Promise<CheckResult> {
  switch (spec.kind) {
    case 'none':
      return { complete: true, reason: 'no check configured' };
    case 'operator':
      return i.operator(i.signal);
    case 'scene':
      return sceneVerdict(spec, i.scene, i.robot);
    case 'verifier':
      return verify(spec.provider, i);
  }
}

async function verify(provider: PolicyProvider, i: CheckInput): Promise<CheckResult> {
  const d = await provider.decide(
    {
      messages: [
        {
          role: 'system',
          text: 'You check whether a robot has completed a task. Judge only from the images and state given. Answer with the verdict tool.',
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: `Task: ${i.instruction}\nThe robot claims: ${i.summary}` },
            ...(i.references.length
              ? [{ type: 'text' as const, text: 'References given with the task:' }, ...i.references]
              : []),
            { type: 'text', text: 'The robot now:' },
            ...i.observation,
          ],
        },
      ],
      tools: [VERDICT_TOOL],
    },
    i.signal,
  );
  const call = d.call;
  if (!call.ok) return { complete: false, reason: `the verifier gave no verdict (${call.message})` };
  const problem =
    call.name === 'verdict' ? checkLoopToolArguments(VERDICT_TOOL, call.arguments) : `called ${call.name}`;
  if (problem) return { complete: false, reason: `the verifier gave no valid verdict (${problem})` };
  const v = call.arguments as { complete: boolean; reason: string };
  return { complete: v.complete, reason: `verifier: ${v.reason}` };
}
