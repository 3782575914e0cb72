// The robots.* JSON-RPC methods: list the served robots, stream their state, run one tool call
// (progress as notifications, the outcome as the result), stop at once, and hand out the tool
// schemas for a model.
import { openaiTools, toolDefinitions } from '../../../robot/tools/schemas.js';
import { armReports } from '../../../robot/tools/outcome.js';
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';
import { anything, int, obj, oneOf, optional, str } from '../../../robot/common/validation/builders.js';
import type { RobotLink } from '../../robots/link-service.js';
import type { RobotRuntime } from '../../robots/runtime.js';

export const STATE_NOTIFICATION = 'robots.state';
export const PROGRESS_NOTIFICATION = 'robots.progress';

/** The `robot` param of robots.* methods. */
export const robotParam = str({ nonEmpty: true, doc: 'robot id (robots.list)' });

/** The served robot `id`, or an invalid-params error naming the served ones. */
export function servedRobot(link: RobotLink, id: string): RobotRuntime {
  const r = link.robot(id);
  if (r) return r;
  const known = [...link.robots.keys()];
  throw new RpcError(
    RpcCode.INVALID_PARAMS,
    `Invalid params: robot: is not a served robot (served: ${known.join(', ') || 'none'}), got ${JSON.stringify(id)}`,
    { field: 'robot', rule: 'must be a served robot id' },
  );
}

/** `stopped`: told of each robot that robots.stop stopped (the policy service ends its episode). */
export function registerRobotMethods(rpc: RpcRegistry, link: RobotLink, stopped?: (robot: string) => void): void {
  const robotOf = (id: string) => servedRobot(link, id);
  const robot = robotParam;

  rpc.register(
    'robots.list',
    obj({}),
    () => ({ robots: [...link.robots.values()].map((r) => r.summary(link.now())) }),
    'served robots: arms, controller, availability, freshness, clock, busy arms',
  );

  rpc.register(
    'robots.tools',
    obj({
      robot,
      format: oneOf(['openai', 'plain'], {
        default: 'openai',
        doc: 'openai: the `tools` request format; plain: {name, description, parameters}',
      }),
    }),
    ({ robot: id, format }) => {
      const arms = robotOf(id).model.armNames;
      return { robot: id, arms, tools: format === 'openai' ? openaiTools(arms) : toolDefinitions(arms) };
    },
    'the tool JSON Schemas for a robot, ready to hand to a model',
  );

  rpc.register(
    'robots.call',
    obj({
      robot,
      call: anything('one tool call: an OpenAI tool call or assistant message, {name, arguments}, or the model text'),
    }),
    ({ robot: id, call }, ctx) => {
      const r = robotOf(id);
      const callId = r.executor.newId('call');
      // Dead man: the connection closing while the call runs stops the arms it moves.
      return r.executor.execute(
        call,
        (phase, detail) => ctx.notify(PROGRESS_NOTIFICATION, { robot: id, call_id: callId, phase, ...detail }),
        callId,
        ctx.signal,
      );
    },
    `runs one tool call; ${PROGRESS_NOTIFICATION} notifications report its phases; the result is the outcome; closing the connection meanwhile stops the arms it moves`,
  );

  rpc.register(
    'robots.stop',
    obj({ robot: optional(robot), arm: optional(str({ nonEmpty: true })) }),
    async ({ robot: id, arm }) => {
      const targets = id === undefined ? [...link.robots.values()] : [robotOf(id)];
      if (arm !== undefined && (targets.length !== 1 || !targets[0]!.model.armNames.includes(arm))) {
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: arm: must be an arm of the given robot (${targets.length === 1 ? targets[0]!.model.armNames.join(', ') : 'give robot too'}), got ${JSON.stringify(arm)}`,
          { field: 'arm', rule: 'must be an arm of robot' },
        );
      }
      // Every stop is published before any is awaited.
      const pending = targets.map((r) =>
        r.executor.stop('user', undefined, arm ?? null).then((o) => ({ robot: r.id, ...o })),
      );
      for (const r of targets) stopped?.(r.id);
      return { stopped: await Promise.all(pending) };
    },
    'stops every arm (of one robot, or of all) at once; the result reports them at rest',
  );

  // State subscriptions live on their connection: key → stop function.
  const subs = new Map<string, () => void>();
  let next = 1;
  rpc.register(
    'robots.state',
    obj({ robot, rate_hz: int({ min: 1, max: 500, default: 10, doc: 'notifications per second' }) }),
    ({ robot: id, rate_hz }, ctx) => {
      const r = robotOf(id);
      // After the robot check, before the timer: a refused subscription starts nothing.
      const end = ctx.subscribe(() => stop());
      const subscription = `robot-state-${next++}`;
      let seq = 0;
      const timer = setInterval(() => {
        // A client that does not read gets no more queued samples than one interval's worth.
        if (ctx.bufferedAmount > 1 << 20) return;
        const now = link.now();
        const s = r.session.latest;
        const problem = r.session.problem(now);
        const age = r.session.stateAge(now);
        ctx.notify(STATE_NOTIFICATION, {
          subscription,
          robot: id,
          seq: seq++,
          ready: problem === null,
          problem,
          state_age_ms: Number.isFinite(age) ? Math.round(age * 1000) : null,
          controller_time: s?.time ?? null,
          arms: armReports(r.model, s) ?? null,
          faults: s?.faults ?? [],
          busy: r.executor.busyArms(),
          cameras: r.cameras.status(now),
        });
      }, 1000 / rate_hz);
      const stop = () => {
        clearInterval(timer);
        subs.delete(`${ctx.connectionId}/${subscription}`);
        end();
      };
      subs.set(`${ctx.connectionId}/${subscription}`, stop);
      return { subscription, robot: id, rate_hz, notification: STATE_NOTIFICATION };
    },
    `streams ${STATE_NOTIFICATION} notifications at rate_hz until robots.unsubscribe or the connection closes`,
  );
  rpc.register(
    'robots.unsubscribe',
    obj({ subscription: str({ nonEmpty: true }) }),
    ({ subscription }, ctx) => {
      const stop = subs.get(`${ctx.connectionId}/${subscription}`);
      if (!stop)
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: subscription: is not an active robots.state subscription of this connection, got ${JSON.stringify(subscription)}`,
          { field: 'subscription', rule: 'must be an active subscription' },
        );
      stop();
      return { unsubscribed: subscription };
    },
    'ends a robots.state subscription',
  );

  rpc.register(
    'sim.scene',
    obj({ robot }),
    ({ robot: id }) => {
      const s = robotOf(id).simScene;
      return {
        robot: id,
        age_ms: s ? Math.round((link.now() - s.at) * 1000) : null,
        scene: s?.msg ?? null,
      };
    },
    'the latest ground truth of a simulated workcell (object poses, held objects, success predicates, collisions); null until its simulator sends one',
  );
}
