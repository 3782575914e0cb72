// Types of the context compiler: the references an episode starts with (goal images, demonstration
// videos, recorded actions), its options, and what it produces (ordered parts + a report).

/** A folder of PNG/JPEG frames in name order; times from `fps` (t = i / fps) or a JSON sidecar of seconds. */
export interface FrameFolderSource {
  kind: 'frames';
  dir: string;
  fps?: number;
  /** Path of a JSON array of frame times (s), one per frame in name order, strictly increasing. */
  timestamps?: string;
}

/** A video file, decoded by `ffmpeg` (must be on PATH) at `fps` frames per second (default options.videoFps). */
export interface VideoFileSource {
  kind: 'video';
  path: string;
  fps?: number;
}

export interface VideoInput {
  /** Camera name shown in the text records. */
  camera: string;
  source: FrameFolderSource | VideoFileSource;
}

export interface DemonstrationInput {
  name: string;
  /** One or more views on one clock; the first is the timeline that action samples align to. */
  videos: VideoInput[];
  /** Recorded robot actions: a .jsonl or .csv log (docs/policy.md "Action log"). */
  actions?: string;
}

export interface GoalImageInput {
  path: string;
  label?: string;
}

export interface ContextInput {
  goals?: GoalImageInput[];
  demonstrations?: DemonstrationInput[];
}

export interface ContextOptions {
  /** Side of the square greyscale thumbnails the scene-change measure compares (px). */
  thumbSize: number;
  /** Candidate windows: length and stride (s); stride < length makes them overlap. */
  windowS: number;
  strideS: number;
  /** A window whose largest change is below this (mean |Δgrey| / 255) yields no candidate. */
  minChange: number;
  /** Two thumbnails closer than this (same measure) are near-duplicates. */
  duplicateDistance: number;
  /** Keyframes kept per video (2..24) and images in all (1..48, goal images included). */
  maxKeyframesPerVideo: number;
  maxImages: number;
  /** An action sample or event further than this (s) from every frame is unaligned. */
  alignToleranceS: number;
  /** Thinning keeps about one sample per this period (s) of each segment. */
  samplePeriodS: number;
  /** A gap longer than this (s) between samples of an arm starts a new segment. */
  segmentGapS: number;
  /** An arm moves between two samples when a joint changes by more than this (rad). */
  moveThreshold: number;
  /** Longest side of the images sent (px, ≤ 1280) and their JPEG quality. */
  imageMaxSide: number;
  jpegQuality: number;
  /** Decoding of video files: frame rate, most frames, ffmpeg time limit (ms). */
  videoFps: number;
  maxFrames: number;
  ffmpegTimeoutMs: number;
  /** PATH searched for ffmpeg (default: the process's). */
  pathEnv?: string;
  /** Checks and maps every path read (e.g. FileRoots.resolve); `field` names the input field. */
  resolvePath?: (path: string, field: string) => Promise<string>;
}

/** What keyframe selection reads of the options. */
export type KeyframeSelectionOptions = Pick<
  ContextOptions,
  'windowS' | 'strideS' | 'minChange' | 'duplicateDistance' | 'maxKeyframesPerVideo' | 'alignToleranceS'
>;

export const DEFAULT_CONTEXT_OPTIONS: ContextOptions = {
  thumbSize: 32,
  windowS: 2,
  strideS: 1,
  minChange: 0.02,
  duplicateDistance: 0.02,
  maxKeyframesPerVideo: 24,
  maxImages: 48,
  alignToleranceS: 0.1,
  samplePeriodS: 1,
  segmentGapS: 1,
  moveThreshold: 0.002,
  imageMaxSide: 768,
  jpegQuality: 85,
  videoFps: 10,
  maxFrames: 3000,
  ffmpegTimeoutMs: 120_000,
};

export interface TextPart {
  type: 'text';
  text: string;
}

export interface ImagePart {
  type: 'image';
  /** goal/<n> or <demo>/<camera>/<frame index>. */
  id: string;
  /** What it shows, e.g. "demonstration pick, camera top, t=1.50 s, contact" (stands in when not shown). */
  label: string;
  mime: 'image/jpeg';
  bytes: Buffer;
  width: number;
  height: number;
}

export type ContextPart = TextPart | ImagePart;

export type EventKind = 'contact' | 'release' | 'arm_change';

/** A moment taken from the action log: gripper command closing/opening, or a change of the moving arms. */
export interface ActionEvent {
  kind: EventKind;
  t: number;
  /** The arm(s): one arm for gripper events, the new moving set joined by '+' for arm_change. */
  arm: string;
  line: number;
}

export type KeyframeReason = 'first' | 'last' | EventKind | 'change';

export interface VideoReport {
  demo: string;
  camera: string;
  frames: number;
  /** Frames chosen by the windows, before the global pass. */
  candidates: number[];
  /** Frames kept, in order, after the global pass and both caps. */
  keyframes: number[];
}

export interface ActionReport {
  demo: string;
  file: string;
  samples: number;
  aligned: number;
  unaligned: number;
  /** Aligned samples kept by thinning (sent) and dropped by it (counted, not listed). */
  kept: number;
  thinned: number;
}

export type DropReason = 'near_duplicate' | 'cap_per_video' | 'cap_total' | 'unaligned';

export interface Dropped {
  what: 'frame' | 'goal' | 'sample' | 'event';
  /** goal/<n>, <demo>/<camera> or <demo> (samples, events). */
  ref: string;
  reason: DropReason;
  index?: number;
  line?: number;
  t?: number;
  detail?: string;
}

export interface ContextReport {
  images: number;
  videos: VideoReport[];
  actions: ActionReport[];
  events: (ActionEvent & { demo: string })[];
  dropped: Dropped[];
}

export interface CompiledContext {
  parts: ContextPart[];
  report: ContextReport;
}

/** A bad input: names the input field, and the file, line and log field when there is one. */
export class ContextInputError extends Error {
  constructor(
    message: string,
    readonly field: string,
    readonly file?: string,
    readonly line?: number,
  ) {
    super(message);
    this.name = 'ContextInputError';
  }
}
