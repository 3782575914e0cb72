// The daemon's view of one robot controller, whatever transport carries it: availability,
// its description checked against the robot config, the newest state and its age, and the
// clock offset. Pure: every method takes the daemon time `now` (seconds, monotonic).
import { ClockSync, type ClockEstimate } from './clock-sync.js';
import type { Availability, DescriptionMsg, EventMsg, StateMsg } from './protocol.js';
import { compareDescription, compareState, type ExpectedArms } from './protocol-validate.js';

export type LinkProblemCode =
  | 'offline'
  | 'no_description'
  | 'description_mismatch'
  | 'no_state'
  | 'stale_state'
  | 'controller_fault'
  | 'link_down';

export interface LinkProblem {
  code: LinkProblemCode;
  message: string;
}

/** What the executor hears from the session. */
export interface SessionListener {
  state(s: StateMsg, now: number): void;
  event(e: EventMsg, now: number): void;
  /** The controller went away or restarted: whatever it was doing is no longer known. */
  lost(
    code: 'offline' | 'controller_restarted' | 'link_down' | 'description_mismatch' | 'clock_jump',
    message: string,
    now: number,
  ): void;
}

/** Seconds a state's time may lie ahead of the estimated controller clock (the estimate errs by a delay). */
export const FUTURE_LIMIT = 1;

export class ControllerSession {
  readonly clock = new ClockSync();
  availability: Availability | null = null;
  description: DescriptionMsg | null = null;
  /** Differences between the controller's description and the robot config ([] = they agree). */
  mismatch: string[] = [];
  latest: StateMsg | null = null;
  /** Daemon time the newest state arrived. */
  latestAt = -Infinity;
  /** Messages dropped as invalid: against the description, out of time order, or naming no command sent (last reason). */
  invalid = 0;
  lastInvalid: string | null = null;
  listener: SessionListener | null = null;
  private transportUp = true;
  private lastHbSeq = -1;

  /**
   * staleAfter: seconds after which the newest state no longer counts as current (the
   * newer of its arrival and its sampling time on the estimated controller clock).
   */
  constructor(
    readonly id: string,
    readonly expected: ExpectedArms,
    readonly staleAfter: number,
  ) {}

  onAvailability(v: Availability, now: number): void {
    const was = this.availability;
    this.availability = v;
    if (v === 'offline' && was !== 'offline') this.listener?.lost('offline', `controller ${this.id} went offline`, now);
  }

  onDescription(d: DescriptionMsg, now: number): void {
    const restarted = this.description !== null && this.description.session !== d.session;
    // Calls still running are answered from the old session's last state (where the arm was
    // last seen), so they are told before that state is dropped.
    if (restarted)
      this.listener?.lost('controller_restarted', `controller ${this.id} restarted (new session ${d.session})`, now);
    if (restarted || this.description === null) this.forget();
    this.description = d;
    this.mismatch = compareDescription(d, this.expected);
    if (!restarted && this.mismatch.length) this.listener?.lost('description_mismatch', this.mismatchMessage(), now);
  }

  onState(s: StateMsg, now: number): void {
    if (!this.description || this.mismatch.length) return;
    const problems = compareState(s, this.description);
    if (problems.length) {
      this.invalid++;
      this.lastInvalid = problems.join('; ');
      return;
    }
    // A monotonic clock cannot report a sample from its future: such a state would also hide
    // every real one behind it as reordered, and skew the clock estimate.
    const tc = this.controllerTime(now);
    if (tc !== null && s.time > tc + FUTURE_LIMIT) {
      this.invalid++;
      this.lastInvalid = `time: ${s.time} s is ${(s.time - tc).toFixed(3)} s ahead of the controller clock as estimated (${tc.toFixed(3)} s; limit ${FUTURE_LIMIT} s)`;
      return;
    }
    const last = this.latest;
    if (last && s.time <= last.time) {
      if (s.seq <= last.seq) return; // reordered or repeated
      this.invalid++;
      if (s.time === last.time) {
        // A hung driver republishing its last sample: not new, so the newest state ages on.
        this.lastInvalid = `time: ${s.time} s repeats the newest state's time with seq rising (${last.seq} → ${s.seq}): the controller's samples stopped`;
        return;
      }
      // A clock that went back: its times and the estimate built on them no longer hold.
      this.lastInvalid = `time: ${s.time} s is before the newest state's ${last.time} s with seq rising (${last.seq} → ${s.seq}): the controller's clock is not monotonic`;
      this.forget();
      const why = `the clock of controller ${this.id} went back (state time ${last.time} s → ${s.time} s, seq ${last.seq} → ${s.seq})`;
      this.listener?.lost('clock_jump', why, now);
      return;
    }
    // One round trip per heartbeat: later states echoing the same one add nothing new.
    if (s.hb && s.hb.seq !== this.lastHbSeq) {
      this.lastHbSeq = s.hb.seq;
      this.clock.addRoundTrip(s.hb.daemon_time, s.hb.rx_time, s.time, now);
    } else if (!s.hb) this.clock.addOneWay(s.time, now);
    this.latest = s;
    this.latestAt = now;
    this.listener?.state(s, now);
  }

  onEvent(e: EventMsg, now: number): void {
    this.listener?.event(e, now);
  }

  /** The transport itself is up (MQTT connected) or not; down counts as every controller lost. */
  setTransportUp(up: boolean, now: number): void {
    const was = this.transportUp;
    this.transportUp = up;
    if (was && !up)
      this.listener?.lost('link_down', `lost the connection to controller ${this.id} (the daemon's link is down)`, now);
  }

  clockEstimate(now: number): ClockEstimate | null {
    return this.clock.estimate(now);
  }

  /** Daemon time `now` on the controller's clock, or null before any estimate. */
  controllerTime(now: number): number | null {
    const e = this.clock.estimate(now);
    return e ? now + e.offset : null;
  }

  /**
   * Seconds since the newest state: since it arrived, or since it was sampled (on the estimated
   * controller clock) when that is longer: a state delayed on the way is older than its arrival.
   */
  stateAge(now: number): number {
    if (!this.latest) return Infinity;
    const e = this.clock.estimate(now);
    const age = now - this.latestAt;
    return e ? Math.max(age, now - (this.latest.time - e.offset)) : age;
  }

  /** Why no command may be sent now, or null when the controller is online, matching and fresh. */
  problem(now: number): LinkProblem | null {
    if (!this.transportUp) return { code: 'link_down', message: `the daemon's link to controller ${this.id} is down` };
    if (this.availability !== 'online')
      return { code: 'offline', message: `controller ${this.id} is ${this.availability ?? 'not connected'}` };
    if (!this.description)
      return { code: 'no_description', message: `controller ${this.id} has not sent its description` };
    if (this.mismatch.length) return { code: 'description_mismatch', message: this.mismatchMessage() };
    if (!this.latest) return { code: 'no_state', message: `controller ${this.id} has not sent a state yet` };
    const age = this.stateAge(now);
    if (age > this.staleAfter) {
      return {
        code: 'stale_state',
        message: `the newest state of controller ${this.id} is ${Math.round(age * 1000)} ms old (limit ${Math.round(this.staleAfter * 1000)} ms)`,
      };
    }
    // Robot-wide faults (no_heartbeat: it has not heard the daemon yet) make it refuse commands.
    if (this.latest.faults.length)
      return { code: 'controller_fault', message: `controller ${this.id} reports ${this.latest.faults.join(', ')}` };
    return null;
  }

  /** Drops the state and the clock estimate (a new session or a clock that went back). */
  private forget(): void {
    this.clock.reset();
    this.latest = null;
    this.latestAt = -Infinity;
    this.lastHbSeq = -1;
  }

  private mismatchMessage(): string {
    return `refusing to drive controller ${this.id}: its description does not match the robot config: ${this.mismatch.join('; ')}`;
  }
}
