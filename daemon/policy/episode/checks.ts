// Completion checks: a `done` is a claim; before an episode ends as done the configured check
// confirms it. none: nothing to confirm. operator: a person answers with policy.confirm.
// scene: the simulator's predicates a task of the scene requires (or named ones). verifier: a separate model call that may only
// answer with the `verdict` tool.
import { checkLoopToolArguments, type PolicyTool } from '../tools.js';
import type { ContentPart, PolicyProvider } from '../providers/types.js';
import type { SceneTruth } from './types.js';

export type CheckSpec =
  | { kind: 'none' }
  | { kind: 'operator' }
  | { kind: 'scene'; task?: string; predicates?: string[] }
  | { kind: 'verifier'; provider: PolicyProvider };

export interface CheckResult {
  complete: boolean;
  reason: string;
  /** scene: every predicate read, the task checked, the predicates it required and those that held. */
  predicates?: Record<string, boolean>;
  task?: string;
  required?: string[];
  held?: string[];
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
      return `${lead} The scene's success conditions${check.task ? ` of task ${check.task}` : ` (${(check.predicates ?? []).join(', ')})`} are checked; if they do not hold, the reason comes back and the task continues.`;
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

/** The predicates a task of the scene requires (or the named ones) must all hold; the reason names those that do not. */
export async function sceneVerdict(
  spec: { task?: string; predicates?: string[] },
  truth: SceneTruth,
  robot: string,
): Promise<CheckResult> {
  const scene = await truth.predicates(robot);
  if (!scene) return { complete: false, reason: `robot ${robot} has no simulated scene to check` };
  if (scene.problem) return { complete: false, reason: scene.problem };
  const all = scene.predicates;
  const held = Object.keys(all).filter((n) => all[n]);
  const problem = sceneSpecProblem(spec, scene);
  if (problem) return { complete: false, reason: problem, predicates: all, held };
  const required = spec.task ? scene.tasks![spec.task]! : spec.predicates!;
  const lead = spec.task ? `task ${spec.task}: ` : '';
  const failing = required.filter((n) => !all[n]);
  return {
    complete: failing.length === 0,
    reason: failing.length
      ? `${lead}not yet true in the scene: ${failing.join(', ')}`
      : `${lead}true in the scene: ${required.join(', ')}`,
    predicates: all,
    ...(spec.task ? { task: spec.task } : {}),
    required,
    held,
  };
}

/** Why a scene check cannot be judged on this scene: an unknown task or predicate. */
export function sceneSpecProblem(
  spec: { task?: string; predicates?: string[] },
  scene: { predicates: Record<string, boolean>; tasks?: Record<string, string[]> },
): string | undefined {
  const tasks = scene.tasks ?? {};
  if (spec.task !== undefined && !(spec.task in tasks))
    return `check.task: is not a task of the scene (tasks: ${Object.keys(tasks).join(', ') || 'none'}), got ${JSON.stringify(spec.task)}`;
  const unknown = (spec.predicates ?? []).filter((n) => !(n in scene.predicates));
  if (unknown.length)
    return `check.predicates: the scene has no predicate ${unknown.join(', ')} (it has: ${Object.keys(scene.predicates).join(', ') || 'none'})`;
  return undefined;
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
