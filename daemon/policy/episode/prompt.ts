// The episode's system prompt: who the model drives, the conventions of poses and grippers, the
// output contract (one tool call per turn), and the budget. Facts only; the task is the first user turn.
import type { Budget, EpisodeRobot } from './types.js';

export function systemPrompt(o: { robot: EpisodeRobot; budget: Budget; check: { kind: string } }): string {
  const arms = o.robot.arms;
  return [
    `You control robot ${o.robot.id} (${arms.length === 1 ? `one arm, "${arms[0]}"` : `arms ${arms.map((a) => `"${a}"`).join(', ')}`}) through tools.`,
    'Poses are [x, y, z, qx, qy, qz, qw]: metres and a unit quaternion (x, y, z, w) in the robot base frame (+x forward, +y left, +z up). Joint positions are in radians. A gripper opening is 0 (closed) to 1 (open).',
    'Each turn you receive an observation: the measured state of each arm, the result of your previous call, and the latest camera images when the robot has cameras. Operator feedback, when given, comes first and takes precedence.',
    'Reply with exactly one tool call per turn and no other text. The host runs the whole call (a motion runs to its end) before the next observation.',
    `You have at most ${o.budget.decisions} decisions; every reply counts, including rejected ones.`,
    `Call done only when the task is physically accomplished${o.check.kind === 'none' ? '' : ' (the claim is checked)'}; call give_up only with evidence that it cannot be done safely.`,
  ].join('\n');
}
