// The episode's vocabulary: states, budget, events, and the small interfaces an episode is given
// (the robot it drives, the camera frames, the simulator's truth) so that each can be injected.
import type { FrameMeta } from '../../../robot/link/camera-protocol.js';
import type { ToolOutcome, ArmReport } from '../../../robot/tools/outcome.js';
import type { ToolResult } from '../../../robot/tools/validate.js';
import type { Progress } from '../../../robot/tools/motion.js';
import type { ContentPart, PolicyProvider } from '../providers/types.js';
import type { CheckSpec } from './checks.js';
import type { Observation } from './observation.js';
import type { RobotFrames } from './robot-frames.js';

export const EPISODE_STATES = [
  'starting',
  'deciding',
  'executing',
  'checking',
  'paused',
  'done',
  'gave_up',
  'failed',
  'stopped',
  'budget_exhausted',
] as const;
export type EpisodeState = (typeof EPISODE_STATES)[number];
export type FinalState = 'done' | 'gave_up' | 'failed' | 'stopped' | 'budget_exhausted';
export const FINAL_STATES: readonly FinalState[] = ['done', 'gave_up', 'failed', 'stopped', 'budget_exhausted'];
export const isFinal = (s: EpisodeState): s is FinalState => (FINAL_STATES as readonly string[]).includes(s);
/** A record's end state: its episode's final state, or `interrupted` when the daemon stopped while
 *  the episode ran (no episode reaches it; interrupted.ts marks such records at the next start). */
export type RecordEndState = FinalState | 'interrupted';

/** One camera's latest frame: encoded bytes (JPEG or PNG), its size and capture time (s, daemon clock). */
export interface Frame {
  camera: string;
  mime: string;
  bytes: Uint8Array;
  width: number;
  height: number;
  time: number;
}

/** A camera's latest depth frame: its metadata (intrinsics, extrinsics, depth_scale) and 16-bit PNG. */
export interface DepthFrame {
  meta: FrameMeta;
  png: Uint8Array;
  time: number;
}

/** The latest frame of each camera of a robot (the daemon's camera store; a stub has none). */
export interface FrameSource {
  cameras(robot: string): string[];
  latest(robot: string): Frame[];
  /** The latest depth frame of a camera (locate_point); undefined when it has none. */
  depth?(robot: string, camera: string): DepthFrame | undefined;
}

export const NO_FRAMES: FrameSource = { cameras: () => [], latest: () => [] };

/**
 * Every predicate's value, the predicates each task requires, and `problem`: why the predicates
 * cannot be trusted now (a check then rejects the claim with it).
 */
type ScenePredicates =
  | { predicates: Record<string, boolean>; tasks?: Record<string, string[]>; problem?: string }
  | undefined;

/** The simulator's predicates for a robot's scene (as of now); undefined when it has no simulated scene. */
export interface SceneTruth {
  predicates(robot: string): ScenePredicates | Promise<ScenePredicates>;
}

/** What an episode needs of a served robot: its tools' validator and executor, its measured state. */
export interface EpisodeRobot {
  id: string;
  arms: readonly string[];
  /** Measured state of each arm now (undefined before the first state). */
  state(): Record<string, ArmReport> | undefined;
  validate(reply: unknown): ToolResult;
  /** The robots.call path: validates again, plans, moves, reports. */
  execute(call: { name: string; arguments: unknown }, progress: Progress): Promise<ToolOutcome>;
  /** Stops every arm; resolves when they are at rest. */
  stop(reason: string): Promise<ToolOutcome>;
  /** Its frames as tool poses use them (locate_point answers in them). */
  frames: RobotFrames;
}

export interface Budget {
  decisions: number;
  wallS: number;
  /** 0 = no limit. */
  promptTokens: number;
  completionTokens: number;
}

export interface BudgetUsed {
  decisions: number;
  wall_s: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Decisions whose token counts are the chars/4 estimate (the server reported none); absent when 0. */
  estimated_decisions?: number;
}

/** One line of events.jsonl and one policy.event notification. */
export interface EpisodeEvent {
  episode: string;
  seq: number;
  /** Seconds since the episode started (the daemon clock). */
  t: number;
  type: EventType;
  [key: string]: unknown;
}

export type EventType =
  | 'started'
  | 'state'
  | 'observation'
  | 'decision'
  | 'request'
  | 'progress'
  | 'outcome'
  | 'check_pending'
  | 'check'
  | 'feedback'
  | 'paused'
  | 'resumed'
  | 'record_limit'
  | 'finished';

/** What an episode reports of itself (policy.get, policy.list). */
export interface EpisodeSummary {
  id: string;
  robot: string;
  instruction: string;
  state: EpisodeState;
  paused: boolean;
  provider: string;
  check: string;
  budget: { decisions: number; wall_s: number; prompt_tokens: number; completion_tokens: number };
  used: BudgetUsed;
  /** Why it ended (final states). */
  reason?: string;
  started_at: string;
}

export interface EpisodeOptions {
  id: string;
  robot: EpisodeRobot;
  instruction: string;
  provider: PolicyProvider;
  check: CheckSpec;
  budget: Budget;
  frames: FrameSource;
  scene: SceneTruth;
  /** Daemon clock (s). */
  now: () => number;
  imageMaxSide: number;
  keepImages: number;
  windowTurns: number;
  /** Turns summarised at a time (HistoryOptions.summaryBlock). */
  summaryBlock: number;
  /** Compiled references (goal images, demonstrations) after the instruction. */
  references?: ContentPart[];
  /** Every event, in order (records and notifications). */
  emit: (e: EpisodeEvent, images?: Observation['images']) => void;
}
