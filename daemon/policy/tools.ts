// The policy loop's tools: the robot's seven (robot/tools/schemas.ts) plus give_up and
// locate_point, which the loop handles itself (neither moves an arm), so they live here rather
// than in the robot's executor and validator.
import { compileSchema, type Schema } from '../../robot/common/validation/json-schema.js';
import { formatIssues } from '../../robot/common/validation/issue.js';
import { toolDefinitions } from '../../robot/tools/schemas.js';

export interface PolicyTool {
  name: string;
  description: string;
  parameters: Schema;
}

export const LOOP_TOOL_NAMES = ['give_up', 'locate_point'] as const;
export type LoopToolName = (typeof LOOP_TOOL_NAMES)[number];

/** Pixel coordinates beyond this are not plausible for any camera we serve (≤ 1280 px sent, raw ≤ 8K). */
const MAX_PIXEL = 8192;

/** The loop's own tools; locate_point only when the robot has cameras to point into. */
export function loopTools(cameras: readonly string[]): PolicyTool[] {
  const tools: PolicyTool[] = [
    {
      name: 'give_up',
      description: 'End the task as impossible or unsafe, with the evidence; the arms stay where they are.',
      parameters: {
        type: 'object',
        properties: {
          reason: { type: 'string', minLength: 1, maxLength: 2000 },
          hindsight: { type: 'string', maxLength: 2000 },
        },
        required: ['reason'],
        additionalProperties: false,
      },
    },
  ];
  if (cameras.length > 0) {
    const pixel = (axis: string): Schema => ({
      type: 'number',
      minimum: 0,
      maximum: MAX_PIXEL,
      description: `Pixel ${axis} in the camera's latest image (origin top-left, ${axis === 'u' ? 'u right' : 'v down'}).`,
    });
    tools.push({
      name: 'locate_point',
      description:
        "Turn a pixel of a camera's latest image (as shown to you) into the 3-D point seen there, from the camera's depth image and calibration; point_xyz is in the frame of move_to targets.",
      parameters: {
        type: 'object',
        properties: { camera: { type: 'string', enum: [...cameras] }, u: pixel('u'), v: pixel('v') },
        required: ['camera', 'u', 'v'],
        additionalProperties: false,
      },
    });
  }
  return tools;
}

/** Every tool a policy model is offered: the robot's (arms in config order), then the loop's. */
export function policyTools(arms: readonly string[], cameras: readonly string[] = []): PolicyTool[] {
  return [...toolDefinitions(arms), ...loopTools(cameras)];
}

/** Checks a loop tool's arguments against its schema: null when valid, else the problem in words. */
export function checkLoopToolArguments(tool: PolicyTool, args: unknown): string | null {
  const issues = compileSchema(tool.parameters)(args ?? {});
  return issues.length ? formatIssues(issues.slice(0, 3), { root: tool.name }) : null;
}
