// The `robots` config section: which robot and setup configs (configs/robots/) the daemon
// serves, under which robot ids and over which controller transport, the link's timing
// (heartbeat, staleness, command expiry), per-robot tracking and settle limits, and the
// simulated controllers it starts itself (`brainstem sim` children, on by default).
import { loadArms, ROBOTS_DIR } from '../../robot/description/loader.js';
import { formatIssues } from '../../robot/common/validation/issue.js';
import { ROBOT_ID_PATTERN } from '../../robot/link/protocol.js';
import { bool, int, list, num, obj, oneOf, optional, str, type Infer } from '../../robot/common/validation/builders.js';
import type { Issue } from '../../robot/common/validation/issue.js';

const ROBOT_ID = new RegExp(ROBOT_ID_PATTERN);

const served = obj({
  id: str({
    nonEmpty: true,
    rule: (s) => (ROBOT_ID.test(s) ? undefined : `must match ${ROBOT_ID_PATTERN} (it is an MQTT topic level)`),
    doc: `robot id on the link (${ROBOT_ID_PATTERN}), unique: MQTT topics <mqtt.base>/robots/<id>/…, robot in WebSocket envelopes and in robots.* calls`,
  }),
  robot: str({
    nonEmpty: true,
    doc: 'robot or setup config name under configs_dir (ur5e, panda, yam, dual-yam, …; checked when the config loads)',
  }),
  transport: oneOf(['mqtt', 'ws'], {
    default: 'mqtt',
    doc: "how its controller connects: mqtt (the daemon's broker, embedded or mqtt.url) or ws (ws://<server>/controller with the API token)",
  }),
  tracking_error_rad: num({
    min: 0.001,
    max: 3.2,
    default: 0.12,
    doc: 'largest |measured − reference| of any joint during a motion; above it the motion is stopped and fails with tracking_error',
  }),
  settle: obj(
    {
      position_tol_rad: optional(num({ min: 1e-6, max: 1, doc: 'settled: every joint within this of its target' })),
      velocity_tol_rad_s: optional(num({ min: 1e-6, max: 10, doc: 'settled: every joint slower than this' })),
      samples: optional(int({ min: 2, max: 10_000, doc: 'consecutive state samples that must agree' })),
      min_window_s: optional(num({ min: 0.001, max: 60, doc: 'shortest time those samples must span' })),
      span_rad: optional(num({ min: 1e-6, max: 1, doc: 'largest spread of a joint over the window' })),
      timeout_s: optional(num({ min: 0.01, max: 600, doc: 'longest wait for the arm to settle after a motion' })),
    },
    { doc: "overrides of the robot config's settle criteria (unset keys keep the config's)" },
  ),
  sim: bool({ default: false, doc: 'start a simulated controller for this robot (when robots.simulate is on)' }),
  sim_args: list(str(), {
    doc: 'extra `brainstem sim` arguments, e.g. ["--rate", "200", "--fault", "tracking,joint=1,at=20"]',
  }),
});

export const robotsSchema = obj(
  {
    configs_dir: str({ default: '', doc: 'directory of robot configs; empty = configs/robots of this package' }),
    heartbeat: obj(
      {
        period_ms: int({ min: 10, max: 10_000, default: 100, doc: 'how often the daemon publishes its heartbeat' }),
        timeout_ms: int({
          min: 20,
          max: 60_000,
          default: 500,
          doc: 'heartbeat silence after which a controller brings its arms to rest by itself (greater than period_ms)',
        }),
      },
      {
        refine: (v, path, issues: Issue[]) => {
          if (v.timeout_ms <= v.period_ms)
            issues.push({
              path: `${path}.timeout_ms`,
              rule: `must be greater than ${path}.period_ms (${v.period_ms})`,
              value: v.timeout_ms,
            });
        },
      },
    ),
    stale_ms: int({
      min: 10,
      max: 10_000,
      default: 200,
      doc: 'a controller whose newest state is older is stale: a running motion fails (and a stop is sent), none starts until fresh',
    }),
    command_expiry_ms: int({
      min: 1,
      max: 60_000,
      default: 500,
      doc: 'a trajectory or gripper command the controller has not taken by then is refused by it (expires_at; MQTT 5 message expiry)',
    }),
    simulate: bool({
      default: true,
      doc: 'start a simulated controller (a `brainstem sim` child) for each served robot marked sim: true; false waits for real controllers',
    }),
    cameras: obj(
      {
        max_frame_bytes: int({
          min: 1024,
          max: 256 << 20,
          default: 8 << 20,
          doc: 'largest camera frame (encoded image) accepted; a larger one is dropped and counted (WebSocket: the socket is closed with 1009)',
        }),
        ring_frames: int({
          min: 1,
          max: 10_000,
          default: 8,
          doc: 'recent frames kept per camera stream (the latest included), for robots.frame index',
        }),
        ring_bytes: int({
          min: 1024,
          max: 2 ** 32,
          default: 32 << 20,
          doc: 'bytes of recent frames kept per camera stream; the oldest go first, the latest always stays',
        }),
        max_streams: int({
          min: 1,
          max: 256,
          default: 16,
          doc: "camera streams (a camera's colour or depth images) a robot may have; only a good frame opens one, one without a good frame for 60 s gives its slot to a new one; frames of further ones are dropped",
        }),
      },
      { doc: 'camera frames controllers send (docs/protocol.md, "Camera frames")' },
    ),
    serve: list(served, { doc: 'robots served (a user file replaces the list as a whole)' }),
  },
  {
    doc: 'Robot arms driven from tool calls: the robot and setup configs served to controllers, over which transport, and the link timing',
    refine: (v, path, issues) => {
      const dir = v.configs_dir || ROBOTS_DIR;
      v.serve.forEach((r, i) => {
        if (v.serve.findIndex((o) => o.id === r.id) !== i)
          issues.push({ path: `${path}.serve[${i}].id`, rule: 'must be unique among robots.serve', value: r.id });
        const loaded = loadArms(r.robot, dir);
        if (!loaded.ok)
          issues.push({
            path: `${path}.serve[${i}].robot`,
            rule: `must name a valid robot or setup config in ${dir}`,
            value: r.robot,
            hint: formatIssues(loaded.issues.slice(0, 3)),
          });
      });
    },
  },
);

export type RobotsConfig = Infer<typeof robotsSchema>;
export type ServedRobot = RobotsConfig['serve'][number];
