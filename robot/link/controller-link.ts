// The controller's end of the link, whatever carries it (MQTT broker or daemon WebSocket):
// what a controller written in TypeScript (the simulator) publishes and receives.
import type { FrameMeta } from './camera-protocol.js';
import type { MessageBySuffix } from './protocol-validate.js';
import type { SimSceneMsg } from './sim-scene.js';

export type ControllerSends = 'availability' | 'description' | 'state' | 'events';
export type ControllerReceives = 'trajectory' | 'gripper' | 'stop' | 'heartbeat' | 'daemon_availability';

export interface ControllerLinkHandlers {
  /** A (re)established connection: publish availability `online` and the description now. */
  up(): void;
  /** An inbound message; `payload` is parsed JSON (availability: its text), not yet validated. */
  message(type: ControllerReceives, payload: unknown): void;
  /** Why the link is down (it retries by itself unless dropped or closed). */
  down(reason: string): void;
}

export interface ControllerLink {
  readonly connected: boolean;
  send<K extends ControllerSends>(type: K, payload: MessageBySuffix[K]): void;
  /**
   * Sends one encoded camera frame (docs/protocol.md, "Camera frames"); false when it was not sent:
   * not connected, or more than UNSENT_FRAME_BYTES are still waiting to go out (a slow link drops frames).
   */
  sendFrame(camera: string, image: Buffer, meta: FrameMeta): boolean;
  /** A simulator's ground truth (`sim/scene`), beside the protocol; dropped while disconnected. */
  sendScene(payload: SimSceneMsg): void;
  /** Cuts the connection without a goodbye, as a crash would (the broker sends the last will). */
  drop(): void;
  /** Connects again after drop(). */
  reconnect(): void;
  /** Publishes availability `offline` and closes cleanly. */
  close(): Promise<void>;
}

/** Unsent bytes above which sendFrame skips a frame rather than queue it. */
export const UNSENT_FRAME_BYTES = 16 << 20;

/** JSON text → value; anything unparsable is handed on as its text, for the validator to name. */
export function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
