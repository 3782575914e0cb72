// Where a camera's calibration frame lies in the frame of the robot's tool poses (the robot's
// base; for several arms the setup's shared world frame), so locate_point answers in the frame
// move_to targets are given in. `world` is that frame itself (as in scenes and the simulator); a
// link (`link`, or `arm/link` when several arms have it) is placed by FK of the measured joints.
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { compose, identity, type Transform } from '../../../robot/math/transform.js';
import type { RobotModel } from '../../../robot/tools/robot-model.js';

export interface RobotFrames {
  /** The tool frame from `frame` now, or why that frame cannot be placed. */
  toolFrom(frame: string): Transform | string;
  /** Each arm's base in the tool frame (tool-frame-from-base). */
  arms: { name: string; base: Transform }[];
}

export function robotFrames(model: RobotModel, joints: (arm: string) => ArrayLike<number> | undefined): RobotFrames {
  return {
    arms: model.arms.map((a) => ({ name: a.name, base: a.chain.base })),
    toolFrom(frame) {
      if (frame === 'world') return identity();
      const slash = frame.indexOf('/');
      const link = slash < 0 ? frame : frame.slice(slash + 1);
      const owners = model.arms.filter((a) => (slash < 0 || a.name === frame.slice(0, slash)) && a.chain.hasLink(link));
      if (owners.length === 0)
        return `the calibration frame "${frame}" is neither world nor a link of the robot's arms (${model.armNames.join(', ')})`;
      if (owners.length > 1)
        return `the calibration frame "${frame}" is a link of several arms (${owners.map((a) => a.name).join(', ')}): name it arm/link`;
      const arm = owners[0]!;
      const q = joints(arm.name);
      if (!q) return `arm ${arm.name} has no measured joints to place link ${link}`;
      const frames = new Float64Array((arm.chain.dof + 1) * 12);
      forwardKinematics(arm.chain, q, new Float64Array(12), frames);
      const offset = new Float64Array(12);
      const i = arm.chain.linkFrame(link, offset);
      return compose(new Float64Array(12), frames.subarray(12 * i, 12 * i + 12), offset);
    },
  };
}
