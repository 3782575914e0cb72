// The policy service: starts episodes (one per robot at a time), routes operator controls to
// them, records them, and ends every running one as stopped (arms at rest) when the daemon stops
// or an operator stops the robot.
import { randomBytes } from 'node:crypto';
import type { Command } from '../../../robot/tools/executor.js';
import { armReports } from '../../../robot/tools/outcome.js';
import type { ChatService } from '../../engine/chat-service.js';
import type { Logger } from '../../log.js';
import type { RobotLink } from '../../robots/link-service.js';
import type { RobotRuntime } from '../../robots/runtime.js';
import { Service } from '../../service.js';
import type { PolicyConfig } from '../config.js';
import { referenceContent } from '../context/parts.js';
import { type CompiledContext, ContextInputError } from '../context/types.js';
import type { ContentPart } from '../providers/types.js';
import { sceneSpecProblem } from './checks.js';
import { compileContextFiles, contextBase, contextRoots } from './context-files.js';
import { Episode } from './episode.js';
import { makeCheck, makeProvider, type CheckParams, type ProviderParams } from './provider-spec.js';
import { EpisodeRecorder, imageCapOf, type ImagesStopped, newEpisodeId } from './records.js';
import { RecordUpkeep } from './record-upkeep.js';
import type { EpisodeEvent, EpisodeOptions, EpisodeRobot, EpisodeSummary, FrameSource, SceneTruth } from './types.js';
import { linkFrames, linkScene } from './link-frames.js';
import { robotFrames } from './robot-frames.js';

export interface StartRequest {
  robot: string;
  instruction: string;
  provider: ProviderParams;
  check?: CheckParams;
  budget?: { decisions?: number; wall_s?: number; prompt_tokens?: number; completion_tokens?: number };
  references?: ContentPart[];
  /** The context compiler's input (goals, demonstrations) with file paths, compiled here first. */
  context?: unknown;
}

export type EventListener = (e: EpisodeEvent) => void;

export interface PolicyServiceDeps {
  config: PolicyConfig;
  dataDir: string;
  link: RobotLink;
  chat: ChatService;
  log: Logger;
  /** Default: the robots' camera stores (linkFrames). */
  frames?: FrameSource;
  /** Default: each robot's latest sim/scene (linkScene). */
  scene?: SceneTruth;
}

/** Why a request cannot be served; `field` names the param (the RPC layer turns it into invalid params). */
export class PolicyRequestError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyRequestError';
  }
}

/** Ended episodes kept in memory for policy.get/list (records keep them all). */
const KEEP_ENDED = 50;

interface Entry {
  episode: Episode;
  recorder: EpisodeRecorder;
  listeners: Set<EventListener>;
  provider: string;
  startedAt: string;
}

export class PolicyService extends Service {
  readonly name = 'policy';
  frames: FrameSource;
  scene: SceneTruth;
  /** Ended episodes kept in memory (a property so tests can lower it). */
  keepEnded = KEEP_ENDED;
  private readonly entries = new Map<string, Entry>();
  /** Ended episodes' ids in the order they ended: the earliest ended are forgotten first. */
  private readonly ended: string[] = [];
  private readonly byRobot = new Map<string, string>();
  private readonly records: RecordUpkeep;

  constructor(private readonly deps: PolicyServiceDeps) {
    super();
    this.frames = deps.frames ?? linkFrames(deps.link);
    this.scene = deps.scene ?? linkScene(deps.link);
    const running = { has: (id: string) => [...this.byRobot.values()].includes(id) };
    this.records = new RecordUpkeep(deps.dataDir, deps.config.records, running, deps.log);
  }

  protected async onStart(): Promise<void> {
    // Before the first episode can start, so no record of this run is among them.
    await this.records.markInterrupted();
    this.deps.link.commandObserver = (robot, c) => this.onCommand(robot, c);
  }

  /** Every running episode ends as stopped, its arms at rest. */
  protected async onStop(): Promise<void> {
    // The observer goes after the stops: their stop commands belong in the records too.
    await Promise.all([...this.byRobot.values()].map((id) => this.entries.get(id)!.episode.stop('daemon_stop')));
    this.deps.link.commandObserver = null;
    await this.records.idle();
  }

  protected override describe() {
    return { detail: { running: this.byRobot.size } };
  }

  async startEpisode(req: StartRequest, listener?: EventListener): Promise<string> {
    if (this.status !== 'ready') throw new PolicyRequestError('robot', `the policy service is ${this.status}`);
    const runtime = this.deps.link.robot(req.robot);
    if (!runtime)
      throw new PolicyRequestError(
        'robot',
        `robot: is not a served robot (served: ${[...this.deps.link.robots.keys()].join(', ') || 'none'}), got ${JSON.stringify(req.robot)}`,
      );
    const problem = runtime.session.problem(this.deps.link.now());
    if (problem)
      throw new PolicyRequestError(
        'robot',
        `robot ${req.robot} is not ready (${problem.message}); an episode starts only on a ready robot`,
      );
    const running = this.byRobot.get(req.robot);
    if (running)
      throw new PolicyRequestError(
        'robot',
        `robot ${req.robot} already runs episode ${running} (${this.entries.get(running)!.episode.state}); stop it first (policy.stop)`,
      );
    const id = newEpisodeId(new Date(), randomBytes(3).toString('hex'));
    const ctx = { chat: this.deps.chat, episode: id, apiKeyEnvs: this.deps.config.api_key_envs };
    let provider;
    let check;
    try {
      provider = await makeProvider(req.provider, ctx);
    } catch (err) {
      throw new PolicyRequestError('provider', (err as Error).message);
    }
    try {
      check = await makeCheck(req.check, ctx);
    } catch (err) {
      // A verifier's provider: its messages name `provider.…`, which is check.provider here.
      const m = (err as Error).message;
      throw new PolicyRequestError('check.provider', m.startsWith('provider') ? `check.${m}` : `check.provider: ${m}`);
    }
    if (check.kind === 'scene') {
      const scene = await this.scene.predicates(req.robot);
      if (!scene)
        throw new PolicyRequestError('check', `check: scene needs a simulated scene, and robot ${req.robot} has none`);
      const problem = scene.problem ? undefined : sceneSpecProblem(check, scene);
      if (problem) throw new PolicyRequestError('check', `robot ${req.robot}: ${problem}`);
    }
    const references = await this.references(req);
    // The daemon began stopping while this start was being prepared: its stop would miss it.
    if (this.status !== 'ready') throw new PolicyRequestError('robot', `the policy service is ${this.status}`);
    // A second start for the same robot while this one was being prepared.
    if (this.byRobot.has(req.robot))
      throw new PolicyRequestError('robot', `robot ${req.robot} already runs episode ${this.byRobot.get(req.robot)}`);
    const c = this.deps.config;
    const b = req.budget ?? {};
    const budget = {
      decisions: b.decisions ?? c.budget.decisions,
      wallS: b.wall_s ?? c.budget.wall_s,
      promptTokens: b.prompt_tokens ?? c.budget.prompt_tokens,
      completionTokens: b.completion_tokens ?? c.budget.completion_tokens,
    };
    const startedAt = new Date().toISOString();
    const sim = runtime.simScene?.msg;
    const recorder = new EpisodeRecorder(
      this.deps.dataDir,
      id,
      {
        robot: req.robot,
        robot_config: runtime.entry.robot,
        ...(sim ? { sim: { scene: sim.scene, seed: sim.seed } } : {}),
        instruction: req.instruction,
        provider:
          req.provider.kind === 'scripted' ? { kind: 'scripted', lines: req.provider.lines!.length } : req.provider,
        check: req.check ?? { kind: 'none' },
        budget: budgetJson(budget),
        started_at: startedAt,
      },
      imageCapOf(c.records.max_bytes),
    );
    const listeners = new Set<EventListener>(listener ? [listener] : []);
    const episode = new Episode({
      id,
      robot: episodeRobot(runtime),
      instruction: req.instruction,
      provider,
      check,
      budget,
      frames: this.frames,
      scene: this.scene,
      now: this.deps.link.now,
      imageMaxSide: c.image_max_side,
      keepImages: c.keep_images,
      windowTurns: c.window_turns,
      summaryBlock: c.summary_block,
      ...(references.parts.length ? { references: references.parts } : {}),
      emit: (e, images) => {
        let stopped: ImagesStopped | undefined;
        try {
          stopped = recorder.event(e, images);
        } catch (err) {
          this.deps.log.warn({ episode: id, err: (err as Error).message }, 'could not record an episode event');
        }
        for (const l of listeners) l(e);
        // After the observation's listeners: the note follows it, in seq order, everywhere.
        if (stopped) episode.emit('record_limit', { ...stopped });
      },
    });
    this.entries.set(id, { episode, recorder, listeners, provider: provider.name, startedAt });
    this.byRobot.set(req.robot, id);
    // Old records past the limits go, in the background: a start never waits for the walk.
    this.records.retain();
    episode.emit('started', {
      robot: req.robot,
      instruction: req.instruction,
      provider: provider.name,
      check: check.kind,
      budget: budgetJson(budget),
      references: {
        parts: references.parts.length,
        images: references.parts.filter((r) => r.type === 'image').length,
        ...(references.compiled ? { compiled: references.compiled } : {}),
      },
    });
    episode.start();
    void episode.finished.then((state) => {
      this.byRobot.delete(req.robot);
      this.deps.log.info({ episode: id, robot: req.robot, state, reason: episode.reason }, 'episode ended');
      this.ended.push(id);
      this.forgetOld();
    });
    return id;
  }

  /** The context's files compiled (inside the context roots), then the references given as they are. */
  private async references(req: StartRequest): Promise<{ parts: ContentPart[]; compiled?: object }> {
    if (req.context === undefined) return { parts: req.references ?? [] };
    const { config, dataDir } = this.deps;
    let c: CompiledContext;
    try {
      c = await compileContextFiles(req.context, contextRoots(config.context_roots, dataDir), contextBase(dataDir));
    } catch (err) {
      if (err instanceof ContextInputError) throw new PolicyRequestError(err.field, err.message);
      throw err;
    }
    const r = c.report;
    return {
      parts: [...referenceContent(c.parts), ...(req.references ?? [])],
      compiled: {
        images: r.images,
        keyframes: r.videos.reduce((n, v) => n + v.keyframes.length, 0),
        action_rows: r.actions.reduce((n, a) => n + a.kept, 0),
        dropped: r.dropped.length,
      },
    };
  }

  /** The episode by id (running or ended in this daemon run). */
  episode(id: string): Episode {
    const e = this.entries.get(id);
    if (!e)
      throw new PolicyRequestError(
        'id',
        `id: is not an episode of this daemon run (policy.list), got ${JSON.stringify(id)}`,
      );
    return e.episode;
  }

  /** Adds a listener of the episode's further events; returns its removal. */
  listen(id: string, l: EventListener): () => void {
    this.episode(id);
    const set = this.entries.get(id)!.listeners;
    set.add(l);
    return () => {
      set.delete(l);
    };
  }

  /** Stops an episode if it is known and running (a closed connection's episode). */
  stopIfRunning(id: string, reason: string): void {
    void this.entries.get(id)?.episode.stop(reason);
  }

  /** An operator stop of a robot (robots.stop) ends its running episode as stopped. */
  robotStopped(robot: string): void {
    const id = this.byRobot.get(robot);
    if (id) void this.entries.get(id)!.episode.stop('robot_stop');
  }

  summary(id: string): EpisodeSummary {
    const e = this.entries.get(id)!;
    const ep = e.episode;
    return {
      id,
      robot: ep.o.robot.id,
      instruction: ep.o.instruction,
      state: ep.state,
      paused: ep.operator.paused,
      provider: e.provider,
      check: ep.o.check.kind,
      budget: budgetJson(ep.o.budget),
      used: { ...ep.used },
      ...(ep.reason ? { reason: ep.reason } : {}),
      started_at: e.startedAt,
    };
  }

  list(): EpisodeSummary[] {
    return [...this.entries.keys()].map((id) => this.summary(id));
  }

  recordDir(id: string): string {
    return this.entries.get(id)!.recorder.dir;
  }

  private onCommand(robot: string, c: Command): void {
    const id = this.byRobot.get(robot);
    if (!id) return;
    const e = this.entries.get(id)!;
    e.recorder.command(e.episode.elapsed(), c.type, c.msg);
  }

  private forgetOld(): void {
    while (this.ended.length > this.keepEnded) this.entries.delete(this.ended.shift()!);
  }
}

/** A served robot as an episode drives it: its executor, the same path as robots.call. */
export function episodeRobot(r: RobotRuntime): EpisodeRobot {
  return {
    id: r.id,
    arms: r.model.armNames,
    state: () => armReports(r.model, r.session.latest),
    validate: (reply) => r.executor.validator.validate(reply),
    execute: (call, progress) => r.executor.execute(call, progress, r.executor.newId('call')),
    stop: (reason) => r.executor.stop(reason),
    frames: robotFrames(r.model, (arm) => r.session.latest?.arms[arm]?.q),
  };
}

/** A budget as the API and the record spell it (snake_case, as `used`). */
function budgetJson(b: EpisodeOptions['budget']) {
  return {
    decisions: b.decisions,
    wall_s: b.wallS,
    prompt_tokens: b.promptTokens,
    completion_tokens: b.completionTokens,
  };
}
