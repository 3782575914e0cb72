// The protocol over WebSocket (`/controller`): each text frame is one envelope
// {type: <topic suffix or "heartbeat">, robot: <id> (not on heartbeat), payload: <the MQTT payload>}.
// The socket replaces the broker: its close is the last will (`offline`) of every robot it served.
import { type Issue, formatIssue, formatIssues } from '../common/validation/issue.js';
import { compileSchema } from '../common/validation/json-schema.js';
import { CONTROLLER_TOPICS, DAEMON_TOPICS, type RobotTopic } from './protocol.js';
import { envelopeSchema } from './protocol-schemas.js';
import { validateMessage, type Checked, type MessageBySuffix } from './protocol-validate.js';

export const CONTROLLER_PATH = '/controller';

const checkEnvelope = compileSchema(envelopeSchema);

export type EnvelopeType = RobotTopic | 'heartbeat' | 'sim_scene';
export type Sender = 'controller' | 'daemon';

export interface Envelope<K extends EnvelopeType = EnvelopeType> {
  type: K;
  /** Robot id; null only for heartbeat. */
  robot: string | null;
  payload: MessageBySuffix[K];
}

/** Which envelope types each side may send. */
export const SENDS: Record<Sender, readonly EnvelopeType[]> = {
  controller: [...CONTROLLER_TOPICS, 'sim_scene'],
  daemon: [...DAEMON_TOPICS, 'heartbeat'],
};

export function encodeEnvelope<K extends EnvelopeType>(
  type: K,
  robot: string | null,
  payload: MessageBySuffix[K],
): string {
  return JSON.stringify(robot === null ? { type, payload } : { type, robot, payload });
}

/** Parses and validates one frame sent by `from`; the payload is validated for its type. */
export function decodeEnvelope(raw: string | Buffer, from: Sender): Checked<Envelope> {
  const fail = (e: Issue): Checked<Envelope> => ({
    ok: false,
    issues: [e],
    message: formatIssue(e, { root: 'envelope' }),
  });
  let v: unknown;
  try {
    v = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch (err) {
    return fail({ path: '', rule: `must be JSON (${(err as Error).message})`, value: String(raw).slice(0, 40) });
  }
  const issues = checkEnvelope(v);
  if (issues.length) return { ok: false, issues, message: formatIssues(issues, { root: 'envelope' }) };
  const env = v as { type: EnvelopeType; robot?: string; payload: unknown };
  if (!SENDS[from].includes(env.type)) {
    return fail({
      path: 'type',
      rule: `is not sent by the ${from} (it sends ${SENDS[from].join(', ')})`,
      value: env.type,
    });
  }
  if (env.type === 'heartbeat' && env.robot !== undefined)
    return fail({ path: 'robot', rule: 'must be absent on heartbeat', value: env.robot });
  if (env.type !== 'heartbeat' && env.robot === undefined)
    return fail({ path: 'robot', rule: `is required on ${env.type}`, value: undefined });
  const payload = validateMessage(env.type, env.payload);
  if (!payload.ok) {
    return { ok: false, issues: payload.issues, message: `envelope.payload (${env.type}): ${payload.message}` };
  }
  return { ok: true, value: { type: env.type, robot: env.robot ?? null, payload: payload.value } };
}
