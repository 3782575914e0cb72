// The `robots` config section: which robot and setup configs (configs/robots/) the daemon
// serves, under which robot ids and over which controller transport, the link's timing
// (heartbeat, staleness, command expiry), per-robot tracking and settle limits, and the
// simulated controllers it starts itself (`brainstem sim` children, on by default).
import { loadArms, ROBOTS_DIR } from '../../robot/description/loader.js';
import { formatIssues } from '../../robot/common/validation/issue.js';
import { ROBOT_ID_PATTERN } from '../../robot/link/protocol.js';
import { bool, int, list, num, obj, oneOf, optional, str, type Infer } from '../../robot/common/validation/builders.js';
import { type Issue } from '../../robot/common/validation/issue.js';

const ROBOT_ID = new RegExp(ROBOT_ID_PATTERN);

const served = obj({
  id: str({ nonEmpty: true, rule: (s) => (ROBOT_ID.test(s) ? undefined : `must match ${ROBOT_ID_PATTERN} (it is an MQTT topic level)`), doc: 'robot id on the link' }),
  robot: str({ nonEmpty: true, doc: 'robot or setup config name under configs_dir' }),
  transport: oneOf(['mqtt', 'ws'], { default: 'mqtt', doc: 'how its controller connects: MQTT topics or the /controller WebSocket' }),
  tracking_error_rad: num({ min: 0.001, max: 3.2, default: 0.12, doc: 'largest |measured − reference| before a motion is stopped' }),
  settle: obj({
    position_tol_rad: optional(num({ min: 1e-6, max: 1 })),
    velocity_tol_rad_s: optional(num({ min: 1e-6, max: 10 })),
    samples: optional(int({ min: 2, max: 10_000 })),
    min_window_s: optional(num({ min: 0.001, max: 60 })),
    span_rad: optional(num({ min: 1e-6, max: 1 })),
    timeout_s: optional(num({ min: 0.01, max: 600 })),
  }),
  sim: bool({ default: false, doc: 'start a simulated controller for this robot (when robots.simulate is on)' }),
  sim_args: list(str(), { doc: 'extra `brainstem sim` arguments, e.g. ["--rate", "200"]' }),
});

export const robotsSchema = obj(
  {
    configs_dir: str({ default: '', doc: 'directory of robot configs; empty = configs/robots of this package' }),
    heartbeat: obj(
      {
        period_ms: int({ min: 10, max: 10_000, default: 100, doc: 'daemon heartbeat period' }),
        timeout_ms: int({ min: 20, max: 60_000, default: 500, doc: 'heartbeat silence after which a controller stops its arms' }),
      },
      {
        refine: (v, path, issues: Issue[]) => {
          if (v.timeout_ms <= v.period_ms) issues.push({ path: `${path}.timeout_ms`, rule: `must be greater than ${path}.period_ms (${v.period_ms})`, value: v.timeout_ms });
        },
      },
    ),
    stale_ms: int({ min: 10, max: 10_000, default: 200, doc: 'a controller whose newest state is older is stale: motions end, none start' }),
    command_expiry_ms: int({ min: 1, max: 60_000, default: 500, doc: 'a trajectory or gripper command not taken by then is refused by the controller' }),
    simulate: bool({ default: true, doc: 'start the simulated controllers of robots marked sim: true' }),
    serve: list(served, { doc: 'robots served, each {id, robot, transport, tracking_error_rad, settle, sim, sim_args}' }),
  },
  {
    refine: (v, path, issues) => {
      const dir = v.configs_dir || ROBOTS_DIR;
      v.serve.forEach((r, i) => {
        if (v.serve.findIndex((o) => o.id === r.id) !== i) issues.push({ path: `${path}.serve[${i}].id`, rule: 'must be unique among robots.serve', value: r.id });
        const loaded = loadArms(r.robot, dir);
        if (!loaded.ok) issues.push({ path: `${path}.serve[${i}].robot`, rule: `must name a valid robot or setup config in ${dir}`, value: r.robot, hint: formatIssues(loaded.issues.slice(0, 3)) });
      });
    },
  },
);

export type RobotsConfig = Infer<typeof robotsSchema>;
export type ServedRobot = RobotsConfig['serve'][number];
