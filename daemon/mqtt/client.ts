// The daemon's own MQTT client: retained `<base>/daemon/availability` = online, with an
// `offline` last will (and an explicit offline on a clean stop); reconnects with doubling
// backoff. protocol auto: MQTT 5 first, 3.1.1 when the broker refuses 5 (e.g. aedes).
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { connect, type IClientOptions, type IClientPublishOptions, type IPublishPacket, MqttClient, Store } from 'mqtt';
import type { MqttConfig } from '../config/schema.js';
import { redactUrl } from '../config/secrets.js';
import type { Logger } from '../log.js';
import { Service } from '../service.js';
import { withTimeout } from '../util/net.js';
import { backoffDelay } from './backoff.js';
import { readTlsFiles } from './tls.js';
import { AVAILABILITY_OFFLINE, AVAILABILITY_ONLINE, availabilityTopic } from './topics.js';

export interface MqttClientDeps {
  config: MqttConfig;
  /** Broker URL, read at start (the embedded broker's port is known only once it listens). */
  brokerUrl: () => string;
  /** The embedded broker's in-process connection, used instead of a socket to brokerUrl. */
  inProcess?: () => Duplex;
  /** Password for the configured username (generated one for the embedded broker). */
  password: string;
  /** The embedded broker speaks 3.1.1 only: skip the MQTT 5 attempt. */
  embedded: boolean;
  log: Logger;
  random?: () => number;
}

// CONNACK codes meaning "protocol version not supported": 3.1.1 returnCode 1, MQTT 5 reason 0x84.
const UNSUPPORTED_PROTOCOL = new Set([1, 132]);
const FIRST_CONNECT_WAIT_MS = 10_000;
const OFFLINE_PUBLISH_WAIT_MS = 2_000;

export type MqttMessageHandler = (topic: string, payload: Buffer, packet: IPublishPacket) => void;

/** mqtt.js's in-memory outgoing store, also keeping the topic of each stored publish by message id. */
class TopicStore extends Store {
  readonly topics = new Map<number, string>();

  override put(...[packet, cb]: Parameters<Store['put']>): this {
    if (packet.cmd === 'publish' && packet.messageId !== undefined) this.topics.set(packet.messageId, packet.topic);
    return super.put(packet, cb);
  }

  override del(...[packet, cb]: Parameters<Store['del']>): this {
    if (packet.messageId !== undefined) this.topics.delete(packet.messageId);
    return super.del(packet, cb);
  }
}

export class DaemonMqttClient extends Service {
  readonly name = 'mqtt-client';
  private client?: MqttClient;
  private version: 4 | 5 = 5;
  private attempt = 0;
  private lastError?: string;
  /** The broker URL without its password, for health (computed once: health runs per API call under load). */
  private shownUrl = '';
  /** Subscriptions of later parts, renewed on every connection (sessions are clean). */
  private readonly subscriptions = new Map<string, 0 | 1>();
  private readonly messageHandlers = new Set<MqttMessageHandler>();
  private readonly connectionHandlers = new Set<(connected: boolean) => void>();
  private readonly dropped: ((topic: string) => boolean)[] = [];

  constructor(private readonly deps: MqttClientDeps) {
    super();
  }

  get connected(): boolean {
    return this.client?.connected === true;
  }

  /** MQTT protocol in use: "5" or "3.1.1". */
  get protocol(): '5' | '3.1.1' {
    return this.version === 5 ? '5' : '3.1.1';
  }

  /** For later parts (robot link): publishes through the daemon's connection. */
  async publish(topic: string, payload: string | Buffer, opts: IClientPublishOptions = {}): Promise<void> {
    if (!this.client) throw new Error('MQTT client is not started');
    await this.client.publishAsync(topic, payload, opts);
  }

  /** For later parts (robot link): subscribes now and after every reconnection; `handler` sees every message. */
  subscribe(filters: Record<string, 0 | 1>, handler: MqttMessageHandler): void {
    for (const [filter, qos] of Object.entries(filters)) this.subscriptions.set(filter, qos);
    this.messageHandlers.add(handler);
    if (this.client?.connected) this.renewSubscriptions(this.client, filters);
  }

  /** Called with true on every (re)connection and false when the connection is lost. */
  onConnection(handler: (connected: boolean) => void): void {
    this.connectionHandlers.add(handler);
  }

  /** Stops calling `handler` for messages (its filters stay subscribed). */
  offMessage(handler: MqttMessageHandler): void {
    this.messageHandlers.delete(handler);
  }

  offConnection(handler: (connected: boolean) => void): void {
    this.connectionHandlers.delete(handler);
  }

  /**
   * Unacknowledged QoS 1 messages on topics `pick` takes are dropped when the connection is lost
   * (their publish rejects): mqtt.js would resend them on reconnection, before anything else.
   */
  dropOnDisconnect(pick: (topic: string) => boolean): void {
    this.dropped.push(pick);
  }

  protected override describe() {
    const detail = {
      url: this.shownUrl,
      transport: this.deps.inProcess ? 'in-process' : 'socket',
      protocol: this.protocol,
      connected: this.connected,
      ...(this.lastError ? { last_error: this.lastError } : {}),
    };
    return this.connected ? { detail } : { degraded: 'not connected to the MQTT broker (reconnecting)', detail };
  }

  protected async onStart(): Promise<void> {
    const { config, log } = this.deps;
    const url = this.deps.brokerUrl();
    this.shownUrl = redactUrl(url);
    const topic = availabilityTopic(config.base);
    this.version = this.deps.embedded || config.protocol === '3.1.1' ? 4 : 5;
    const fromUrl = new URL(url);
    const username = fromUrl.username ? decodeURIComponent(fromUrl.username) : config.username;
    const outgoing = new TopicStore();
    const opts: IClientOptions = {
      protocolVersion: this.version,
      // `<username>.…`: a broker with brainstem's ACLs binds client ids to identities this way.
      clientId: `${username || 'brainstem'}.daemon-${hostname().slice(0, 20)}-${randomBytes(3).toString('hex')}`,
      clean: true,
      keepalive: 30,
      connectTimeout: FIRST_CONNECT_WAIT_MS,
      reconnectPeriod: config.reconnect.min_ms,
      reconnectOnConnackError: true,
      outgoingStore: outgoing,
      will: { topic, payload: Buffer.from(AVAILABILITY_OFFLINE), qos: 1, retain: true },
      // Credentials inside mqtt.url win over mqtt.username/password.
      ...(fromUrl.username
        ? {}
        : { username: config.username || undefined, password: this.deps.password || undefined }),
    };
    // In-process, a message from a controller reaches the robot link in the turn the broker reads it.
    const inProcess = this.deps.inProcess;
    const client = inProcess
      ? new MqttClient(inProcess, { ...opts, protocol: 'mqtt' })
      : connect(url, { ...opts, ...readTlsFiles(config.tls, (k) => `mqtt.tls.${k}`) });
    this.client = client;
    let settle: () => void = () => undefined;
    const firstOutcome = new Promise<void>((resolve) => (settle = resolve));
    const timer = setTimeout(settle, FIRST_CONNECT_WAIT_MS);

    client.on('connect', () => {
      this.attempt = 0;
      this.lastError = undefined;
      client.options.reconnectPeriod = config.reconnect.min_ms;
      log.info({ url: redactUrl(url), protocol: this.protocol }, 'MQTT connected');
      this.renewSubscriptions(client, Object.fromEntries(this.subscriptions));
      for (const h of this.connectionHandlers) h(true);
      client.publish(topic, AVAILABILITY_ONLINE, { qos: 1, retain: true }, (err) => {
        if (err) log.warn({ err: err.message }, 'could not publish availability');
        settle();
      });
    });
    client.on('reconnect', () => {
      this.attempt++;
      client.options.reconnectPeriod = backoffDelay(
        this.attempt + 1,
        config.reconnect.min_ms,
        config.reconnect.max_ms,
        this.deps.random ?? Math.random,
      );
      log.debug({ attempt: this.attempt, next_ms: client.options.reconnectPeriod }, 'MQTT reconnecting');
    });
    client.on('error', (err: Error & { code?: number | string }) => {
      this.lastError = err.message;
      if (
        config.protocol === 'auto' &&
        this.version === 5 &&
        typeof err.code === 'number' &&
        UNSUPPORTED_PROTOCOL.has(err.code)
      ) {
        this.version = 4;
        client.options.protocolVersion = 4;
        log.info('broker does not support MQTT 5: using 3.1.1');
        return;
      }
      log.warn({ url: redactUrl(url), err: err.message }, 'MQTT error');
      settle();
    });
    client.on('close', () => {
      for (const [id, topic] of outgoing.topics)
        if (this.dropped.some((pick) => pick(topic))) client.removeOutgoingMessage(id);
    });
    client.on('offline', () => {
      log.warn({ url: redactUrl(url) }, 'MQTT connection lost');
      for (const h of this.connectionHandlers) h(false);
      settle();
    });
    client.on('message', (topic, payload, packet) => {
      for (const h of this.messageHandlers) h(topic, payload, packet);
    });
    await firstOutcome;
    clearTimeout(timer);
  }

  private renewSubscriptions(client: MqttClient, filters: Record<string, 0 | 1>): void {
    if (Object.keys(filters).length === 0) return;
    const request = Object.fromEntries(Object.entries(filters).map(([f, qos]) => [f, { qos }]));
    client.subscribe(request, (err) => {
      if (err) this.deps.log.warn({ err: err.message, filters: Object.keys(filters) }, 'MQTT subscribe failed');
    });
  }

  protected async onStop(): Promise<void> {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    if (client.connected) {
      const topic = availabilityTopic(this.deps.config.base);
      await withTimeout(
        client.publishAsync(topic, AVAILABILITY_OFFLINE, { qos: 1, retain: true }),
        OFFLINE_PUBLISH_WAIT_MS,
        'the offline publish',
      ).catch((err: Error) => this.deps.log.warn({ err: err.message }, 'could not publish offline availability'));
    }
    await withTimeout(client.endAsync(!client.connected), OFFLINE_PUBLISH_WAIT_MS, 'the MQTT disconnect').catch(() =>
      client.end(true),
    );
    this.deps.log.debug('MQTT client stopped');
  }
}
