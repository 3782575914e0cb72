// Stop strings over streamed text: text that could still be the start of a stop string is held
// back until it either completes the stop string (output ends before it) or cannot.
export interface StopPush {
  /** Text safe to emit now. */
  text: string;
  /** The stop string that ended the output, if one did. */
  stop?: string;
}

export class StopStringMatcher {
  private held = '';
  private stopped = false;

  constructor(private readonly stops: readonly string[]) {}

  push(chunk: string): StopPush {
    if (this.stopped) return { text: '' };
    const buf = this.held + chunk;
    let at = -1;
    let which: string | undefined;
    for (const s of this.stops) {
      const i = s.length === 0 ? -1 : buf.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        which = s;
      }
    }
    if (which !== undefined) {
      this.stopped = true;
      this.held = '';
      return { text: buf.slice(0, at), stop: which };
    }
    const keep = this.partialSuffix(buf);
    this.held = buf.slice(buf.length - keep);
    return { text: buf.slice(0, buf.length - keep) };
  }

  /** Releases held text at the end of the output. */
  flush(): string {
    const text = this.stopped ? '' : this.held;
    this.held = '';
    return text;
  }

  // Length of the longest suffix of buf that is a proper prefix of some stop string.
  private partialSuffix(buf: string): number {
    let best = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, buf.length); n > best; n--) {
        if (buf.endsWith(s.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
