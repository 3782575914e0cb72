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
  // On a topic already subscribed the message may come before this SUBACK, or without it when the
  // broker is closing: it counts either way; a failed subscribe fails the wait only without it.
  const subscribed = client.subscribeAsync(topic, { qos: 1 });
  subscribed.catch(() => undefined);
  try {
    return await within(Promise.race([got, subscribed.then(() => got)]), timeoutMs, `an MQTT message on ${topic}`);
  } finally {
    client.off('message', onMessage!);
  }
}
