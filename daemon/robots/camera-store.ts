// One robot's camera streams (a camera's colour or depth images): the latest good frame and a
// ring of recent ones, bounded by count and bytes, the observed rate and age, and the frames
// dropped by reason. A dropped frame never displaces a good one; drops are logged at most once
// per LOG_INTERVAL_S per stream and reason.
import { CONTENT_TYPES, type CameraKind, type CameraMeta } from '../../robot/link/camera-protocol.js';
import { checkImage, type FrameProblem, type FrameProblemCode } from '../../robot/link/image-header.js';
import type { Logger } from '../log.js';

export interface CameraLimits {
  maxFrameBytes: number;
  ringFrames: number;
  ringBytes: number;
  maxStreams: number;
}

export interface StoredFrame {
  meta: CameraMeta;
  image: Buffer;
  contentType: string;
  /** Daemon clock (s) at arrival. */
  receivedAt: number;
}

/** A frame count per drop reason. */
export type DropCounts = Partial<Record<FrameProblemCode, number>>;

const LOG_INTERVAL_S = 10;
/** Weight of the newest interval in the rate's moving average. */
const RATE_ALPHA = 0.25;

export const streamKey = (camera: string, kind: CameraKind) => (kind === 'depth' ? `${camera}/depth` : camera);

class CameraStream {
  /** Oldest first; the last is the latest good frame. */
  readonly frames: StoredFrame[] = [];
  bytes = 0;
  received = 0;
  readonly dropped: DropCounts = {};
  /** Moving average of the seconds between good frames. */
  interval: number | null = null;
  /** The MQTT 3.1.1 sidecar waiting for its image; `invalid` when it was refused (its image goes too). */
  pending: CameraMeta | 'invalid' | null = null;

  constructor(
    readonly camera: string,
    readonly kind: CameraKind,
  ) {}

  get latest(): StoredFrame | undefined {
    return this.frames.at(-1);
  }

  /** Frames per second: 1 / the average interval, lower while the current gap is longer. */
  rate(now: number): number | null {
    const last = this.latest;
    if (!last || this.interval === null) return null;
    return 1 / Math.max(this.interval, now - last.receivedAt);
  }
}

export class CameraStore {
  private readonly streams = new Map<string, CameraStream>();
  /** Drops that name no stream (an unreadable header, a frame cut off by the transport). */
  readonly unattributed: DropCounts = {};
  /** Last warning per stream and reason (bounded: streams × reasons). */
  private readonly logged = new Map<string, { at: number; suppressed: number }>();

  constructor(
    readonly robot: string,
    private readonly limits: CameraLimits,
    private readonly log: Logger,
    /** Called once per frame: outcome `ok` or the drop reason; camera '' when unattributed. */
    private readonly count: (camera: string, outcome: string) => void = () => undefined,
  ) {}

  /**
   * An image with its validated metadata, or with the problem its metadata had: stored, or
   * dropped with the reason returned. Size is checked first, so a huge frame counts as oversize.
   */
  accept(
    camera: string,
    kind: CameraKind,
    meta: CameraMeta | FrameProblem,
    image: Buffer,
    now: number,
  ): FrameProblem | null {
    const s = this.stream(camera, kind);
    const problem: FrameProblem | null = !s
      ? { code: 'too_many_streams', detail: `more than ${this.limits.maxStreams} camera streams: ${camera}` }
      : image.length > this.limits.maxFrameBytes
        ? { code: 'oversize', detail: `${image.length} bytes > ${this.limits.maxFrameBytes}` }
        : 'code' in meta
          ? meta
          : checkImage(image, meta);
    if (!s || problem) {
      this.drop(camera, kind, problem!, now);
      return problem;
    }
    const good = meta as CameraMeta; // a problem was returned above
    const last = s.latest;
    if (last) {
      const dt = Math.max(now - last.receivedAt, 0);
      s.interval = s.interval === null ? dt : s.interval + RATE_ALPHA * (dt - s.interval);
    }
    // The stored copy owns its bytes: a transport's buffer may be a view into a larger one.
    s.frames.push({
      meta: good,
      image: Buffer.from(image),
      contentType: CONTENT_TYPES[good.encoding],
      receivedAt: now,
    });
    s.bytes += image.length;
    s.received++;
    // The newest frame always stays, whatever the byte bound.
    while (s.frames.length > 1 && (s.frames.length > this.limits.ringFrames || s.bytes > this.limits.ringBytes))
      s.bytes -= s.frames.shift()!.image.length;
    this.count(camera, 'ok');
    return null;
  }

  /** Counts and logs a dropped frame; `camera` null when it cannot be told. */
  drop(camera: string | null, kind: CameraKind, problem: FrameProblem, now: number): void {
    const s = camera === null ? undefined : this.stream(camera, kind);
    const counts = s?.dropped ?? this.unattributed;
    counts[problem.code] = (counts[problem.code] ?? 0) + 1;
    this.count(s ? s.camera : '', problem.code);
    const key = `${s ? streamKey(s.camera, s.kind) : ''}|${problem.code}`;
    const logged = this.logged.get(key);
    if (logged && now - logged.at < LOG_INTERVAL_S) {
      logged.suppressed++;
      return;
    }
    this.logged.set(key, { at: now, suppressed: 0 });
    this.log.warn(
      {
        robot: this.robot,
        camera: camera === null ? null : streamKey(camera, kind),
        reason: problem.code,
        err: problem.detail,
        ...(logged ? { also_dropped: logged.suppressed } : {}),
      },
      s ? 'camera frame dropped' : 'camera frame dropped (stream unknown)',
    );
  }

  /** An MQTT 3.1.1 sidecar: the metadata of the next image on its topic (invalid: drop that image). */
  sidecar(camera: string, kind: CameraKind, meta: CameraMeta | 'invalid'): void {
    const s = this.stream(camera, kind);
    if (s) s.pending = meta;
  }

  /** Takes the sidecar waiting for this stream's image. */
  takeSidecar(camera: string, kind: CameraKind): CameraMeta | 'invalid' | null {
    const s = this.streams.get(streamKey(camera, kind));
    const meta = s?.pending ?? null;
    if (s) s.pending = null;
    return meta;
  }

  /** A stored frame: index 0 the latest, 1 the one before, …; undefined when there is none. */
  frame(camera: string, kind: CameraKind, index = 0): StoredFrame | undefined {
    const s = this.streams.get(streamKey(camera, kind));
    return s?.frames[s.frames.length - 1 - index];
  }

  /** The streams with frames, for error messages: `wrist (3), wrist/depth (1)`. */
  inventory(): string {
    const held = [...this.streams.values()].filter((s) => s.frames.length > 0);
    return held.map((s) => `${streamKey(s.camera, s.kind)} (${s.frames.length})`).join(', ') || 'none';
  }

  /** What robots.cameras reports per stream. */
  list(now: number): Record<string, unknown>[] {
    return [...this.streams.values()].map((s) => {
      const last = s.latest;
      return {
        name: s.camera,
        kind: s.kind,
        meta: last?.meta ?? null,
        content_type: last?.contentType ?? null,
        age_s: last ? now - last.receivedAt : null,
        rate_hz: s.rate(now),
        received: s.received,
        dropped: { ...s.dropped },
        ring: { frames: s.frames.length, bytes: s.bytes },
      };
    });
  }

  /** Per stream, the latest frame's age and the observed rate (robots.state, robots.list). */
  status(now: number): Record<string, { age_ms: number | null; rate_hz: number | null }> {
    return Object.fromEntries(
      [...this.streams.values()].map((s) => {
        const last = s.latest;
        return [
          streamKey(s.camera, s.kind),
          { age_ms: last ? Math.round((now - last.receivedAt) * 1000) : null, rate_hz: s.rate(now) },
        ];
      }),
    );
  }

  private stream(camera: string, kind: CameraKind): CameraStream | undefined {
    const key = streamKey(camera, kind);
    let s = this.streams.get(key);
    if (!s && this.streams.size < this.limits.maxStreams) {
      s = new CameraStream(camera, kind);
      this.streams.set(key, s);
    }
    return s;
  }
}
