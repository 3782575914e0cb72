// Shape checks of the compiler's input (it may arrive as JSON, e.g. policy.start's context) and of
// its options; every error names the field, the rule and the value.
import {
  type ContextInput,
  ContextInputError,
  type ContextOptions,
  DEFAULT_CONTEXT_OPTIONS,
  type DemonstrationInput,
  type GoalImageInput,
  type VideoInput,
} from './types.js';

type Obj = Record<string, unknown>;

function fail(field: string, rule: string, value: unknown): never {
  throw new ContextInputError(`${field}: ${rule}, got ${JSON.stringify(value) ?? 'nothing'}`, field);
}

function object(v: unknown, field: string, keys: string[]): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(field, 'expected an object', v);
  const extra = Object.keys(v as Obj).find((k) => !keys.includes(k));
  if (extra !== undefined) fail(`${field}.${extra}`, `unknown field (known: ${keys.join(', ')})`, (v as Obj)[extra]);
  return v as Obj;
}

function list(v: unknown, field: string, min: number): unknown[] {
  if (!Array.isArray(v) || v.length < min) fail(field, `expected an array of at least ${min}`, v);
  return v as unknown[];
}

function name(v: unknown, field: string): string {
  if (typeof v !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(v))
    fail(field, 'expected a name of 1-64 letters, digits, _ . -', v);
  return v as string;
}

function path(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') fail(field, 'expected a file path', v);
  return v as string;
}

/** Frames per second, as options.videoFps allows: one frame per 1000 s up to 1000 per second. */
function rate(v: unknown, field: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 1e-3 || v > 1000)
    fail(field, 'expected a frame rate in [0.001, 1000]', v);
  return v as number;
}

function video(v: unknown, field: string): VideoInput {
  const o = object(v, field, ['camera', 'source']);
  const s = object(o.source, `${field}.source`, ['kind', 'dir', 'path', 'fps', 'timestamps']);
  const camera = name(o.camera, `${field}.camera`);
  const fps = rate(s.fps, `${field}.source.fps`);
  if (s.kind === 'video') {
    object(s, `${field}.source`, ['kind', 'path', 'fps']);
    return { camera, source: { kind: 'video', path: path(s.path, `${field}.source.path`), ...(fps ? { fps } : {}) } };
  }
  if (s.kind !== 'frames') fail(`${field}.source.kind`, "expected 'frames' or 'video'", s.kind);
  object(s, `${field}.source`, ['kind', 'dir', 'fps', 'timestamps']);
  const timestamps = s.timestamps === undefined ? undefined : path(s.timestamps, `${field}.source.timestamps`);
  if ((fps === undefined) === (timestamps === undefined))
    fail(`${field}.source`, 'expected exactly one of fps and timestamps', s);
  return {
    camera,
    source: { kind: 'frames', dir: path(s.dir, `${field}.source.dir`), ...(fps ? { fps } : { timestamps }) },
  };
}

/** A checked copy of `value` as compiler input. */
export function checkContextInput(value: unknown, field = 'context'): ContextInput {
  const o = object(value, field, ['goals', 'demonstrations']);
  const out: ContextInput = {};
  if (o.goals !== undefined)
    out.goals = list(o.goals, `${field}.goals`, 0).map((g, i): GoalImageInput => {
      const f = `${field}.goals[${i}]`;
      const go = object(g, f, ['path', 'label']);
      if (go.label !== undefined && (typeof go.label !== 'string' || go.label.length > 200))
        fail(`${f}.label`, 'expected a text of at most 200 characters', go.label);
      return { path: path(go.path, `${f}.path`), ...(go.label !== undefined ? { label: go.label as string } : {}) };
    });
  if (o.demonstrations !== undefined) {
    const seen = new Set<string>();
    out.demonstrations = list(o.demonstrations, `${field}.demonstrations`, 0).map((d, i): DemonstrationInput => {
      const f = `${field}.demonstrations[${i}]`;
      const dobj = object(d, f, ['name', 'videos', 'actions']);
      const n = name(dobj.name, `${f}.name`);
      if (seen.has(n)) fail(`${f}.name`, 'expected a name not used by another demonstration', n);
      seen.add(n);
      const videos = list(dobj.videos, `${f}.videos`, 1).map((v, k) => video(v, `${f}.videos[${k}]`));
      const cams = videos.map((v) => v.camera);
      const twice = cams.find((c, k) => cams.indexOf(c) !== k);
      if (twice !== undefined) fail(`${f}.videos`, 'expected one video per camera', twice);
      const actions = dobj.actions === undefined ? undefined : path(dobj.actions, `${f}.actions`);
      return { name: n, videos, ...(actions ? { actions } : {}) };
    });
  }
  return out;
}

const RANGES: Partial<Record<keyof ContextOptions, [number, number, boolean]>> = {
  thumbSize: [4, 256, true],
  // A stride under 0.05 s only repeats windows (and multiplies the work).
  windowS: [0.05, 3600, false],
  strideS: [0.05, 3600, false],
  minChange: [0, 1, false],
  duplicateDistance: [0, 1, false],
  maxKeyframesPerVideo: [2, 24, true],
  maxImages: [1, 48, true],
  alignToleranceS: [0, 10, false],
  samplePeriodS: [1e-3, 3600, false],
  segmentGapS: [0, 3600, false],
  moveThreshold: [0, 10, false],
  imageMaxSide: [16, 1280, true],
  jpegQuality: [1, 100, true],
  videoFps: [1e-3, 120, false],
  maxFrames: [2, 100_000, true],
  ffmpegTimeoutMs: [1, 3_600_000, true],
};

/** Defaults merged with `options`, each number checked against its range. */
export function contextOptions(options: Partial<ContextOptions> = {}): ContextOptions {
  const o: ContextOptions = { ...DEFAULT_CONTEXT_OPTIONS, ...options };
  for (const [key, [lo, hi, int]] of Object.entries(RANGES) as [keyof ContextOptions, [number, number, boolean]][]) {
    const v = o[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (int && !Number.isInteger(v)))
      fail(`options.${key}`, `expected ${int ? 'an integer' : 'a number'} in [${lo}, ${hi}]`, v);
  }
  return o;
}
