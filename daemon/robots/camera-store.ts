// One robot's camera streams (a camera's colour or depth images): the latest good frame and a
// ring of recent ones, bounded by count and bytes, the observed rate and age, and the frames
// dropped by reason. A dropped frame never displaces a good one; drops are logged at most once
// per LOG_INTERVAL_S per stream and reason. Only a good frame opens a stream, and a stream idle
// for IDLE_STREAM_S gives its slot to a new one: bad frames under made-up names take no slot.
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
/** Seconds without a good frame after which a stream's slot may go to a new stream. */
export const IDLE_STREAM_S = 60;
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
  /** Last warning per stream and reason (bounded: streams × reasons, plus one per reason unattributed). */
  private readonly logged = new Map<string, { at: number; suppressed: number }>();
  /**
   * MQTT 3.1.1 sidecars waiting for their image by stream key (`invalid`: refused, its image goes
   * too); at most max_streams, the oldest go first, so sidecars alone open no stream.
   */
  private readonly sidecars = new Map<string, CameraMeta | 'invalid'>();

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
    const bad: FrameProblem | null =
      image.length > this.limits.maxFrameBytes
        ? { code: 'oversize', detail: `${image.length} bytes > ${this.limits.maxFrameBytes}` }
        : 'code' in meta
          ? meta
          : checkImage(image, meta);
    const s = bad ? undefined : this.slot(camera, kind, now);
    if (!s) {
      const problem: FrameProblem = bad ?? {
        code: 'too_many_streams',
        detail: `${streamKey(camera, kind)}: all ${this.limits.maxStreams} stream slots had a good frame within ${IDLE_STREAM_S} s`,
      };
      this.drop(camera, kind, problem, now);
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

  /** Counts and logs a dropped frame; unattributed when `camera` is null or its stream has no good frame yet. */
  drop(camera: string | null, kind: CameraKind, problem: FrameProblem, now: number): void {
    const s = camera === null ? undefined : this.streams.get(streamKey(camera, kind));
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
    const key = streamKey(camera, kind);
    this.sidecars.delete(key);
    this.sidecars.set(key, meta);
    if (this.sidecars.size > this.limits.maxStreams) this.sidecars.delete(this.sidecars.keys().next().value!);
  }

  /** Takes the sidecar waiting for this stream's image. */
  takeSidecar(camera: string, kind: CameraKind): CameraMeta | 'invalid' | null {
    const key = streamKey(camera, kind);
    const meta = this.sidecars.get(key) ?? null;
    this.sidecars.delete(key);
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

  /** The stream for a good frame: its own, else a free slot (idle streams give theirs up), else none. */
  private slot(camera: string, kind: CameraKind, now: number): CameraStream | undefined {
    const key = streamKey(camera, kind);
    const s = this.streams.get(key);
    if (s) return s;
    if (this.streams.size >= this.limits.maxStreams) this.evictIdle(now);
    if (this.streams.size >= this.limits.maxStreams) return undefined;
    const fresh = new CameraStream(camera, kind);
    this.streams.set(key, fresh);
    return fresh;
  }

  private evictIdle(now: number): void {
    for (const [key, s] of this.streams) {
      if (now - s.latest!.receivedAt <= IDLE_STREAM_S) continue;
      this.streams.delete(key);
      for (const k of this.logged.keys()) if (k.startsWith(`${key}|`)) this.logged.delete(k);
      this.log.info(
        { robot: this.robot, camera: key, idle_s: now - s.latest!.receivedAt },
        'camera stream idle: slot freed',
      );
    }
  }
}
