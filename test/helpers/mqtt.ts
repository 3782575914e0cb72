// MQTT test clients: connect with credentials and wait for messages on a topic.
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import { within } from './wait.js';

export interface Credentials {
  url: string;
  username: string;
  password: string;
}

export async function connectMqtt(c: Credentials, opts: IClientOptions = {}): Promise<MqttClient> {
  return within(
    connectAsync(c.url, {
      username: c.username,
      password: c.password,
      reconnectPeriod: 0,
      connectTimeout: 5000,
      ...opts,
    }),
    10_000,
    `MQTT connect to ${c.url}`,
  );
}

export interface Received {
  topic: string;
  payload: string;
  retain: boolean;
}

/**
 * Subscribes and resolves with the first message on `topic` that `accept` takes.
 * Retained messages arrive right after subscribing with retain = true.
 */
export async function nextMessage(
  client: MqttClient,
  topic: string,
  accept: (m: Received) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<Received> {
  let onMessage: ((t: string, p: Buffer, packet: { retain: boolean }) => void) | undefined;
  const got = new Promise<Received>((resolve) => {
    onMessage = (t, p, packet) => {
      const m = { topic: t, payload: p.toString(), retain: packet.retain };
      if (t === topic && accept(m)) resolve(m);
    };
    client.on('message', onMessage);
  });
  await client.subscribeAsync(topic, { qos: 1 });
  try {
    return await within(got, timeoutMs, `an MQTT message on ${topic}`);
  } finally {
    client.off('message', onMessage!);
  }
}
