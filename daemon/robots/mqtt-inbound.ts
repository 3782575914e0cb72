// Controller messages over MQTT, by topic: availability, description, state and events go to
// their robot once valid, camera images and sidecars to its camera store, a simulator's scene to
// the robot. Only robots served over MQTT are heard; an oversized message is not parsed.
import type { IPublishPacket } from 'mqtt';
import {
  CONTENT_TYPES,
  MAX_BINARY_HEADER,
  metaFromUserProperties,
  parseCameraTopic,
  validateCameraMeta,
  type CameraMeta,
  type CameraTopic,
} from '../../robot/link/camera-protocol.js';
import { parsePayload } from '../../robot/link/controller-link.js';
import type { FrameProblem } from '../../robot/link/image-header.js';
import { MAX_MESSAGE_BYTES, oversize, parseRobotTopic } from '../../robot/link/protocol.js';
import { decodeMessage, type MessageBySuffix } from '../../robot/link/protocol-validate.js';
import { simSceneRobot } from '../../robot/link/sim-scene.js';
import type { ControllerMessage, RobotRuntime } from './runtime.js';

export const CONTROLLER_TOPICS: ControllerMessage[] = ['availability', 'description', 'state', 'events'];

export interface MqttInboundHost {
  base: string;
  /** A robot served over MQTT, or undefined. */
  robot(id: string): RobotRuntime | undefined;
  now(): number;
  invalid(robot: string, suffix: string, message: string): void;
  deliver(robot: string, kind: ControllerMessage, value: MessageBySuffix[ControllerMessage], via: 'on the topic'): void;
}

export class MqttInbound {
  constructor(private readonly host: MqttInboundHost) {}

  readonly handle = (topic: string, payload: Buffer, packet: IPublishPacket): void => {
    const camera = parseCameraTopic(this.host.base, topic);
    if (camera) return this.onCamera(camera, payload, packet);
    const simRobot = simSceneRobot(this.host.base, topic);
    if (simRobot !== null) return this.onSimScene(simRobot, payload);
    const at = parseRobotTopic(this.host.base, topic);
    if (!at || !CONTROLLER_TOPICS.includes(at.suffix as ControllerMessage)) return;
    if (!this.host.robot(at.robot)) return;
    if (payload.length > MAX_MESSAGE_BYTES) return this.host.invalid(at.robot, at.suffix, oversize(payload.length));
    // An empty payload clears a retained message (availability, description); elsewhere it is malformed.
    if (payload.length === 0) {
      if (at.suffix === 'state' || at.suffix === 'events')
        this.host.invalid(at.robot, at.suffix, 'the payload is empty');
      return;
    }
    const m = decodeMessage(at.suffix as ControllerMessage, payload);
    if (!m.ok) return this.host.invalid(at.robot, at.suffix, m.message);
    this.host.deliver(at.robot, at.suffix as ControllerMessage, m.value as never, 'on the topic');
  };

  /**
   * A camera image or sidecar over MQTT. The image's metadata: its MQTT 5 user properties, else
   * the sidecar that came just before it on `<topic>/meta` (MQTT keeps one client's order).
   */
  private onCamera(at: CameraTopic, payload: Buffer, packet: IPublishPacket): void {
    const r = this.host.robot(at.robot);
    if (!r) return;
    const now = this.host.now();
    const store = r.cameras;
    if (at.meta) {
      const m =
        payload.length > MAX_BINARY_HEADER
          ? validateCameraMeta(`(${payload.length} bytes)`)
          : validateCameraMeta(parsePayload(payload.toString('utf8')), at.kind);
      if (!m.ok) store.drop(at.camera, at.kind, { code: 'invalid_meta', detail: m.message }, now);
      return store.sidecar(at.camera, at.kind, m.ok ? m.value : 'invalid');
    }
    const props = packet.properties;
    let meta: CameraMeta | FrameProblem;
    if (props?.userProperties) {
      const m = validateCameraMeta(metaFromUserProperties(props.userProperties), at.kind);
      meta = m.ok ? m.value : { code: 'invalid_meta', detail: m.message };
      if (m.ok && props.contentType !== undefined && props.contentType !== CONTENT_TYPES[m.value.encoding])
        meta = {
          code: 'wrong_encoding',
          detail: `MQTT content type "${props.contentType}" but meta.encoding "${m.value.encoding}"`,
        };
    } else {
      const side = store.takeSidecar(at.camera, at.kind);
      if (side === 'invalid') return; // counted with its sidecar
      meta = side ?? {
        code: 'no_meta',
        detail: 'no MQTT 5 user properties and no sidecar on <topic>/meta before the image',
      };
    }
    store.accept(at.camera, at.kind, meta, payload, now);
  }

  private onSimScene(robot: string, payload: Buffer): void {
    const r = this.host.robot(robot);
    if (!r) return;
    if (payload.length > MAX_MESSAGE_BYTES) return this.host.invalid(robot, 'sim/scene', oversize(payload.length));
    const m = decodeMessage('sim_scene', payload);
    if (!m.ok) return this.host.invalid(robot, 'sim/scene', m.message);
    r.onSimScene(m.value, this.host.now());
  }
}
