// Offset between a controller's clock and the daemon's, so the daemon can state start times
// and expiries in the controller's clock. offset = controller − daemon (seconds).
//
// Round trip (NTP's on-wire method): heartbeat sent at daemon t1, received at controller t2,
// echoed in a state message sent at controller t3, received at daemon t4:
//   offset = ((t2 − t1) + (t3 − t4)) / 2,  delay = (t4 − t1) − (t3 − t2),  |error| ≤ delay / 2.
// The sample with the smallest delay in a sliding window wins (NTP's clock filter).
// Without echoes, each state gives controller − daemon = offset − one-way delay ≤ offset, so the
// largest such value in the window is the estimate, biased low by the smallest one-way delay.

export interface ClockEstimate {
  offset: number;
  /** Bound on |error| (round trip), or null when only one-way samples exist. */
  uncertainty: number | null;
  source: 'round_trip' | 'one_way';
}

interface Sample {
  at: number;
  offset: number;
  delay: number;
}

export class ClockSync {
  private roundTrips: Sample[] = [];
  private oneWays: Sample[] = [];

  /** window: seconds of daemon time a sample stays usable (clocks drift; ~30 s is ample). */
  constructor(private readonly window = 30) {}

  /** Adds one exchange; returns false (and ignores it) when the timestamps are inconsistent. */
  addRoundTrip(t1: number, t2: number, t3: number, t4: number): boolean {
    const delay = t4 - t1 - (t3 - t2);
    if (![t1, t2, t3, t4].every(Number.isFinite) || t4 < t1 || t3 < t2 || delay < 0) return false;
    push(this.roundTrips, { at: t4, offset: (t2 - t1 + (t3 - t4)) / 2, delay }, this.window);
    return true;
  }

  /** Adds a controller timestamp `tc` received at daemon time `td`. */
  addOneWay(tc: number, td: number): void {
    if (Number.isFinite(tc) && Number.isFinite(td))
      push(this.oneWays, { at: td, offset: tc - td, delay: 0 }, this.window);
  }

  /** The current estimate at daemon time `now`, or null before any usable sample. */
  estimate(now: number): ClockEstimate | null {
    prune(this.roundTrips, now, this.window);
    prune(this.oneWays, now, this.window);
    if (this.roundTrips.length) {
      const best = this.roundTrips.reduce((a, b) => (b.delay < a.delay ? b : a));
      return { offset: best.offset, uncertainty: best.delay / 2, source: 'round_trip' };
    }
    if (this.oneWays.length) {
      return { offset: Math.max(...this.oneWays.map((s) => s.offset)), uncertainty: null, source: 'one_way' };
    }
    return null;
  }

  /** Forget everything (a controller restart starts a new clock). */
  reset(): void {
    this.roundTrips = [];
    this.oneWays = [];
  }
}

const MAX_SAMPLES = 256;

function push(list: Sample[], s: Sample, window: number): void {
  list.push(s);
  prune(list, s.at, window);
  if (list.length > MAX_SAMPLES) list.splice(0, list.length - MAX_SAMPLES);
}

function prune(list: Sample[], now: number, window: number): void {
  let i = 0;
  while (i < list.length && list[i]!.at < now - window) i++;
  if (i) list.splice(0, i);
}
