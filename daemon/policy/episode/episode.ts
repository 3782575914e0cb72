// One episode: the closed loop that asks the provider for one tool call per decision, executes it
// on the robot and feeds the outcome back, until a `done` passes the completion check, the model
// gives up, the budget is spent, or an operator stops it. Malformed or invalid calls go back to
// the model as errors and are never executed.
import type { ToolOutcome } from '../../../robot/tools/outcome.js';
import { unknownTool } from '../../../robot/tools/validate.js';
import { compileHistory, type Turn } from '../history.js';
import { imagePlaceholder } from '../providers/openai-format.js';
import { checkLoopToolArguments, policyTools, type PolicyTool } from '../tools.js';
import type { Decision } from '../providers/types.js';
import { doneDescription, runCheck } from './checks.js';
import { OperatorChannel } from './operator.js';
import { answerLocatePoint } from './locate.js';
import { buildObservation, outcomeText, previousOf, type Observation } from './observation.js';
import { systemPrompt } from './prompt.js';
import type { BudgetUsed, EpisodeEvent, EpisodeOptions, EpisodeState, FinalState } from './types.js';
import { isFinal } from './types.js';
import { linkedSignal } from '../../util/linked-signal.js';

/** `previous`: the short account for the next observation (default: the result's status and text). */
type Step = {
  result: NonNullable<Turn['result']>;
  previous?: ReturnType<typeof previousOf>;
  final?: { state: FinalState; reason: string };
};

export type { EpisodeOptions } from './types.js';

export class Episode {
  state: EpisodeState = 'starting';
  reason?: string;
  readonly operator = new OperatorChannel((type, fields) => this.emit(type, fields));
  readonly used: BudgetUsed = { decisions: 0, wall_s: 0, prompt_tokens: 0, completion_tokens: 0 };
  readonly startedAt: number;
  private seq = 0;
  private ended = false;
  private readonly abort = new AbortController();
  private stopReason: string | null = null;
  /** What the wall budget cut short, once it has (the episode then ends budget_exhausted). */
  private wallOut: string | null = null;
  private tools: PolicyTool[] = [];
  /** The cameras `tools` was built for (locate_point names them), joined. */
  private toolCameras: string | null = null;
  private readonly turns: Turn[] = [];
  private previous: ReturnType<typeof previousOf> | null = null;
  private stopped: Promise<ToolOutcome | null> = Promise.resolve(null);
  private lastObservation: Observation | null = null;
  /** Resolves with the final state once the loop has ended (and the arms are at rest when stopped). */
  finished!: Promise<FinalState>;

  constructor(readonly o: EpisodeOptions) {
    this.startedAt = o.now();
    this.refreshTools();
  }

  /** The tools follow the robot's cameras: one that sends its first frame later is offered from then on. */
  private refreshTools(): void {
    const cameras = this.o.frames.cameras(this.o.robot.id);
    if (cameras.join('\n') === this.toolCameras) return;
    this.toolCameras = cameras.join('\n');
    this.tools = policyTools(this.o.robot.arms, cameras).map((t) =>
      t.name === 'done' ? { ...t, description: doneDescription(this.o.check) } : t,
    );
  }

  /** Starts the loop; `finished` settles when it ends. */
  start(): void {
    this.finished = this.loop();
  }

  emit(type: EpisodeEvent['type'], fields: Record<string, unknown> = {}, images?: Observation['images']): void {
    if (this.ended) return; // `finished` is the last event
    this.used.wall_s = this.elapsed();
    this.o.emit({ episode: this.o.id, seq: this.seq++, t: this.used.wall_s, type, ...fields }, images);
    this.ended = type === 'finished';
  }

  /** Seconds since the start, to the millisecond (events' and commands' `t`). */
  elapsed(): number {
    return Math.round((this.o.now() - this.startedAt) * 1000) / 1000;
  }

  private set(state: EpisodeState): void {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', { state });
  }

  /** Ends the episode as stopped: cancels the model call or check, stops the arms, waits for rest. */
  async stop(reason: string): Promise<FinalState> {
    if (isFinal(this.state)) return this.state;
    if (this.stopReason === null) {
      this.stopReason = reason;
      this.abort.abort();
      this.operator.release();
      this.stopped = this.o.robot.stop(`policy_${reason}`);
    }
    return this.finished;
  }

  private async loop(): Promise<FinalState> {
    const o = this.o;
    let final: { state: FinalState; reason: string };
    try {
      const promptBudget = (await o.provider.promptBudget?.(this.abort.signal)) ?? {};
      for (;;) {
        if (this.operator.paused) this.set('paused');
        await this.operator.unpaused();
        if (this.stopReason !== null) throw new StopSignal();
        const over = this.overBudget();
        if (over) {
          final = { state: 'budget_exhausted', reason: over };
          break;
        }
        this.set('deciding');
        const turn = await this.observe();
        this.refreshTools();
        const compileStart = performance.now();
        const prompt = compileHistory(
          {
            system: systemPrompt(o),
            references: [{ type: 'text', text: `Task: ${o.instruction}` }, ...(o.references ?? [])],
            turns: this.turns,
          },
          {
            tools: this.tools,
            keepImages: o.keepImages,
            windowTurns: o.windowTurns,
            summaryBlock: o.summaryBlock,
            ...promptBudget,
          },
        );
        const promptMs = performance.now() - compileStart;
        this.forgetOldImages();
        const d = await this.inWallTime((signal) =>
          o.provider.decide({ messages: prompt.messages, tools: this.tools }, signal),
        );
        this.count(d, prompt.dropped.summarisedTurns, promptMs);
        turn.reply = d.message;
        // A decision that arrives after a stop is never acted on.
        if (this.stopReason !== null) throw new StopSignal();
        const step = await this.act(d, turn);
        turn.result = step.result;
        this.previous = step.previous ?? previousOf(step.result.tool, step.result.status, step.result.text);
        if (this.stopReason !== null) throw new StopSignal();
        if (step.final) {
          final = step.final;
          break;
        }
      }
    } catch (err) {
      // Stopped only by a stop (which also sends the arms one); a model call or check cut at the
      // wall budget exhausts it; a provider cancelled by anything else (its model unloaded, the
      // server stopping) fails the episode.
      if (this.stopReason !== null) final = { state: 'stopped', reason: this.stopReason };
      else if (this.wallOut)
        final = {
          state: 'budget_exhausted',
          reason: `the episode ran ${this.o.budget.wallS} s (${this.wallOut} cancelled)`,
        };
      else if (err instanceof StopSignal) final = { state: 'stopped', reason: 'stopped' };
      else final = { state: 'failed', reason: (err as Error).message };
    }
    if (final.state === 'stopped') {
      const rest = await this.stopped;
      if (rest)
        this.emit('outcome', {
          decision: this.used.decisions,
          tool: 'stop',
          status: rest.status,
          message: rest.message,
          outcome: rest,
        });
    }
    this.reason = final.reason;
    this.operator.closed = true;
    this.operator.paused = false;
    this.set(final.state);
    this.emit('finished', { state: final.state, reason: final.reason, used: { ...this.used } });
    return final.state;
  }

  /**
   * Runs a model call or a completion check under a signal that a stop aborts and the wall budget
   * too: a remote provider's timeout × retries must not hold the robot for hours past wall_s.
   */
  private async inWallTime<T>(
    call: (signal: AbortSignal) => Promise<T>,
    what = 'the model call under way was',
  ): Promise<T> {
    const left = this.o.budget.wallS - (this.o.now() - this.startedAt);
    const wall = new AbortController();
    const timer = Number.isFinite(left)
      ? setTimeout(() => {
          this.wallOut = what;
          wall.abort();
        }, Math.max(0, left) * 1000)
      : undefined;
    const { signal, unlink } = linkedSignal(this.abort.signal, wall.signal);
    try {
      return await call(signal);
    } finally {
      clearTimeout(timer);
      unlink();
    }
  }

  private overBudget(): string | null {
    const b = this.o.budget;
    const u = this.used;
    u.wall_s = this.o.now() - this.startedAt;
    if (u.decisions >= b.decisions) return `all ${b.decisions} decisions are used`;
    if (u.wall_s >= b.wallS) return `the episode ran ${b.wallS} s`;
    if (b.promptTokens && u.prompt_tokens >= b.promptTokens)
      return `${u.prompt_tokens} prompt tokens used (budget ${b.promptTokens})`;
    if (b.completionTokens && u.completion_tokens >= b.completionTokens)
      return `${u.completion_tokens} completion tokens used (budget ${b.completionTokens})`;
    return null;
  }

  private async observe(): Promise<Turn> {
    const o = this.o;
    const feedback = this.operator.takeFeedback();
    const obs = await buildObservation({
      decision: this.used.decisions + 1,
      arms: o.robot.state(),
      previous: this.previous,
      feedback,
      frames: o.frames.latest(o.robot.id),
      maxSide: o.imageMaxSide,
      now: o.now(),
    });
    this.lastObservation = obs;
    this.emit(
      'observation',
      {
        decision: this.used.decisions + 1,
        text: obs.text,
        images: obs.images.map((i) => i.id),
        feedback,
        state: obs.state,
      },
      obs.images,
    );
    const turn: Turn = { observation: obs.parts };
    this.turns.push(turn);
    return turn;
  }
  /** Images no prompt will show again become the placeholder the history policy would send. */
  private forgetOldImages(): void {
    const images = this.turns.flatMap((t) => t.observation.filter((p) => p.type === 'image'));
    const old = new Set(images.slice(0, Math.max(0, images.length - this.o.keepImages)));
    if (old.size === 0) return;
    for (const t of this.turns)
      t.observation = t.observation.map((p) =>
        p.type === 'image' && old.has(p) ? { type: 'text', text: imagePlaceholder(p.label) } : p,
      );
  }

  /** `summarised`: turns the prompt gave as the host summary (when it grows, the prompt changed
   *  after the references); `promptMs`: compiling the prompt, exact token counts included. */
  private count(d: Decision, summarised: number, promptMs: number): void {
    const u = this.used;
    u.decisions++;
    u.prompt_tokens += d.usage.promptTokens;
    u.completion_tokens += d.usage.completionTokens;
    if (d.usage.estimated) u.estimated_decisions = (u.estimated_decisions ?? 0) + 1;
    this.emit('decision', {
      decision: u.decisions,
      raw: d.raw,
      finish_reason: d.finishReason,
      usage: d.usage,
      timing: d.timing,
      summarised_turns: summarised,
      prompt_ms: Math.round(promptMs * 100) / 100,
      used: { ...u },
    });
  }

  /** What comes of one decision: a rejection, a loop tool, a checked `done`, or an executed call. */
  private async act(d: Decision, turn: Turn): Promise<Step> {
    const n = this.used.decisions;
    // `closed`: the message already ends with what to do (the robot's validator's do).
    const reject = (tool: string | null, message: string, closed = false): Step => {
      this.emit('request', { decision: n, tool, error: message });
      const text = closed ? message : `Not executed: ${message} Reply with exactly one valid tool call.`;
      return { result: { tool, status: 'rejected', text } };
    };
    if (!d.call.ok) return reject(null, d.call.message);
    const { name, arguments: args } = d.call;
    const offered = this.tools.map((t) => t.name);
    if (!offered.includes(name)) return reject(name, `${unknownTool(name, offered)}.`);
    const loopTool = this.tools.find((t) => t.name === name && (name === 'give_up' || name === 'locate_point'));
    if (loopTool) {
      const problem = checkLoopToolArguments(loopTool, args);
      if (problem) return reject(name, problem);
      this.emit('request', { decision: n, tool: name, arguments: args });
      if (name === 'give_up')
        return {
          result: { tool: name, status: 'ok', text: 'Given up.' },
          final: { state: 'gave_up', reason: (args as { reason: string }).reason },
        };
      const a = await answerLocatePoint(
        this.o.frames,
        this.o.robot.id,
        this.o.robot.frames,
        args as { camera: string; u: number; v: number },
        this.o.now(),
        this.o.imageMaxSide,
      );
      this.emit('outcome', { decision: n, tool: name, status: a.status, message: a.text });
      return { result: { tool: name, status: a.status, text: a.text } };
    }
    const v = this.o.robot.validate({ name, arguments: args });
    if (!v.ok) return reject(name, v.message, true);
    this.emit('request', { decision: n, tool: name, arguments: args });
    if (v.call.tool === 'done') return this.checkDone(v.call.summary, turn);
    this.set('executing');
    const outcome = await this.o.robot.execute({ name, arguments: args }, (phase, detail) =>
      this.emit('progress', { decision: n, tool: name, phase, ...detail }),
    );
    this.emit('outcome', {
      decision: n,
      tool: name,
      status: outcome.status,
      reason: outcome.reason,
      message: outcome.message,
      outcome,
    });
    return {
      result: { tool: name, status: outcome.status, text: outcomeText(outcome) },
      previous: previousOf(name, outcome.status, outcome.message, outcome.reason),
    };
  }

  private async checkDone(summary: string, turn: Turn): Promise<Step> {
    const o = this.o;
    this.set('checking');
    const spec = o.check;
    if (spec.kind === 'operator')
      this.emit('check_pending', { decision: this.used.decisions, kind: 'operator', summary });
    const r = await this.inWallTime(
      (signal) =>
        runCheck(spec, {
          robot: o.robot.id,
          instruction: o.instruction,
          summary,
          observation: this.lastObservation?.parts ?? turn.observation,
          references: o.references ?? [],
          operator: (signal) => this.operator.awaitConfirm(signal, () => new StopSignal()),
          scene: o.scene,
          signal,
        }),
      `the ${spec.kind} check under way was`,
    );
    this.emit('check', {
      decision: this.used.decisions,
      kind: spec.kind,
      complete: r.complete,
      reason: r.reason,
      ...(r.predicates ? { predicates: r.predicates } : {}),
      ...(r.task ? { task: r.task } : {}),
      ...(r.required ? { required: r.required } : {}),
      ...(r.held ? { held: r.held } : {}),
    });
    if (r.complete)
      return {
        result: { tool: 'done', status: 'ok', text: `Confirmed: ${r.reason}` },
        final: { state: 'done', reason: r.reason },
      };
    return {
      result: {
        tool: 'done',
        status: 'rejected',
        text: `Done not confirmed (${spec.kind} check): ${r.reason}. The task continues.`,
      },
    };
  }
}

class StopSignal extends Error {
  constructor() {
    super('stopped');
  }
}
