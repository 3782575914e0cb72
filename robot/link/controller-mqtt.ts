// Controller end of the protocol over MQTT (mqtt.js). Registers the retained last will
// `offline` on availability, subscribes to its command topics and the daemon heartbeat.
// Speaks MQTT 5 when the broker does (correlation data on events), else 3.1.1: `auto` tries 5
// and falls back when the broker refuses the protocol version (aedes answers CONNACK code 1).
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { DELIVERY, daemonTopics, mqtt5Properties, robotTopic } from './protocol.js';
import {
  CONTENT_TYPES,
  cameraMetaTopic,
  cameraTopic,
  metaToUserProperties,
  type FrameMeta,
} from './camera-protocol.js';
import {
  UNSENT_FRAME_BYTES,
  parsePayload,
  type ControllerLink,
  type ControllerLinkHandlers,
  type ControllerReceives,
  type ControllerSends,
} from './controller-link.js';
import type { MessageBySuffix } from './protocol-validate.js';
import { simSceneTopic, type SimSceneMsg } from './sim-scene.js';

export type MqttVersion = 'auto' | '3.1.1' | '5';

export interface ControllerMqttOptions {
  url: string;
  base: string;
  robot: string;
  version: MqttVersion;
  clientId: string;
  /** Seconds between reconnection attempts. */
  reconnect?: number;
  /** PEM CA, client certificate and key for mqtts:// brokers. */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
}

/** Connect-refused codes meaning "not this protocol version" (3.1.1: 1, MQTT 5: 0x84). */
const WRONG_VERSION = new Set([1, 0x84]);

export class ControllerMqtt implements ControllerLink {
  private client: MqttClient | null = null;
  private v5 = false;
  private tryV5: boolean;
  private readonly inbound: Map<string, ControllerReceives>;

  constructor(
    private readonly opts: ControllerMqttOptions,
    private readonly on: ControllerLinkHandlers,
  ) {
    this.tryV5 = opts.version !== '3.1.1';
    const t = (s: 'trajectory' | 'gripper' | 'stop') => robotTopic(opts.base, opts.robot, s);
    const d = daemonTopics(opts.base);
    this.inbound = new Map<string, ControllerReceives>([
      [t('trajectory'), 'trajectory'],
      [t('gripper'), 'gripper'],
      [t('stop'), 'stop'],
      [d.heartbeat, 'heartbeat'],
      [d.availability, 'daemon_availability'],
    ]);
    this.open();
  }

  get connected(): boolean {
    return this.client?.connected ?? false;
  }

  send<K extends ControllerSends>(type: K, payload: MessageBySuffix[K]): void {
    const c = this.client;
    if (!c?.connected) return;
    const { qos, retain } = DELIVERY[type];
    const id = type === 'events' ? (payload as MessageBySuffix['events']).id : null;
    const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
    c.publish(robotTopic(this.opts.base, this.opts.robot, type), body, {
      qos,
      retain,
      ...(this.v5 ? { properties: mqtt5Properties(id) } : {}),
    });
  }

  /** MQTT 5: user properties and the content type; 3.1.1: the JSON sidecar on `<topic>/meta` first. */
  sendFrame(camera: string, image: Buffer, meta: FrameMeta): boolean {
    const c = this.client;
    if (!c?.connected || (c.stream?.writableLength ?? 0) > UNSENT_FRAME_BYTES) return false;
    const { base, robot } = this.opts;
    const topic = cameraTopic(base, robot, camera, meta.kind);
    if (this.v5) {
      const properties = { contentType: CONTENT_TYPES[meta.encoding], userProperties: metaToUserProperties(meta) };
      c.publish(topic, image, { qos: 0, retain: false, properties });
    } else {
      c.publish(cameraMetaTopic(base, robot, camera, meta.kind), JSON.stringify({ v: 1, ...meta }), { qos: 0 });
      c.publish(topic, image, { qos: 0, retain: false });
    }
    return true;
  }

  sendScene(payload: SimSceneMsg): void {
    const c = this.client;
    if (!c?.connected) return;
    c.publish(simSceneTopic(this.opts.base, this.opts.robot), JSON.stringify(payload), {
      qos: 0,
      retain: false,
      ...(this.v5 ? { properties: mqtt5Properties(null) } : {}),
    });
  }

  drop(): void {
    this.client?.end(true);
    this.client = null;
  }

  reconnect(): void {
    if (!this.client) this.open();
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = null;
    if (!c) return;
    if (c.connected)
      await c
        .publishAsync(robotTopic(this.opts.base, this.opts.robot, 'availability'), 'offline', DELIVERY.availability)
        .catch(() => undefined);
    await c.endAsync();
  }

  private open(): void {
    const version = this.tryV5 ? 5 : 4;
    const options: IClientOptions = {
      protocolVersion: version,
      clientId: this.opts.clientId,
      clean: true,
      reconnectPeriod: (this.opts.reconnect ?? 1) * 1000,
      connectTimeout: 5000,
      ...this.opts.tls,
      will: {
        topic: robotTopic(this.opts.base, this.opts.robot, 'availability'),
        payload: Buffer.from('offline'),
        qos: 1,
        retain: true,
      },
    };
    const c = mqtt.connect(this.opts.url, options);
    this.client = c;
    let everUp = false;
    c.on('connect', () => {
      everUp = true;
      this.v5 = version === 5;
      const subs: Record<string, { qos: 0 | 1 }> = {};
      for (const [topic, type] of this.inbound)
        subs[topic] = { qos: type === 'heartbeat' ? DELIVERY.heartbeat.qos : 1 };
      c.subscribe(subs, (err) => {
        if (err) this.on.down(`subscribe failed: ${err.message}`);
        else this.on.up();
      });
    });
    c.on('message', (topic, payload) => {
      const type = this.inbound.get(topic);
      if (!type) return;
      const text = payload.toString('utf8');
      this.on.message(type, type === 'daemon_availability' ? text : parsePayload(text));
    });
    c.on('error', (err: Error & { code?: number | string }) => {
      if (
        !everUp &&
        version === 5 &&
        this.opts.version === 'auto' &&
        typeof err.code === 'number' &&
        WRONG_VERSION.has(err.code)
      ) {
        this.tryV5 = false;
        c.end(true);
        if (this.client === c) this.open();
        return;
      }
      this.on.down(err.message);
    });
    c.on('offline', () => this.on.down('broker unreachable'));
  }
}
