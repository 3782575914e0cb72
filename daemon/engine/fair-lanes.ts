// The waiting line of a model's request queue, fair between clients: each client has its own lane
// and turns go round-robin among the lanes (a client that queued ten requests does not make one
// that queued later wait behind all ten). A barrier (a forced acquisition: unload, or a load behind
// one) keeps strict order: what queued before it goes first, what queues after it waits behind it.

/** Lanes by client in turn order (a Map keeps insertion order: re-inserting moves to the back). */
type Group<T> = { lanes: Map<string, T[]> };
type Segment<T> = Group<T> | { barrier: T };

export class FairLanes<T> {
  private readonly segments: Segment<T>[] = [];
  private readonly counts = new Map<string, number>();
  private total = 0;

  /** Everything waiting, barriers included. */
  get size(): number {
    return this.total;
  }

  /** How many of `client`'s items wait (barriers belong to no client). */
  countOf(client: string): number {
    return this.counts.get(client) ?? 0;
  }

  push(item: T, client: string): void {
    const last = this.segments.at(-1);
    const group = last && 'lanes' in last ? last : { lanes: new Map<string, T[]>() };
    if (group !== last) this.segments.push(group);
    const lane = group.lanes.get(client);
    if (lane) lane.push(item);
    else group.lanes.set(client, [item]);
    this.counts.set(client, this.countOf(client) + 1);
    this.total++;
  }

  pushBarrier(item: T): void {
    this.segments.push({ barrier: item });
    this.total++;
  }

  /**
   * The next item: the first segment's barrier, or the first lane's oldest item (that lane then
   * goes to the back). `last` is the client whose turn just ended: its lane yields to another one.
   */
  shift(last?: string): T | undefined {
    const seg = this.segments[0];
    if (!seg) return undefined;
    this.total--;
    if ('barrier' in seg) {
      this.segments.shift();
      return seg.barrier;
    }
    let [client, lane] = seg.lanes.entries().next().value!;
    if (client === last && seg.lanes.size > 1) {
      seg.lanes.delete(client);
      seg.lanes.set(client, lane);
      [client, lane] = seg.lanes.entries().next().value!;
    }
    const item = lane.shift()!;
    seg.lanes.delete(client);
    if (lane.length > 0) seg.lanes.set(client, lane);
    else if (seg.lanes.size === 0) this.segments.shift();
    this.uncount(client);
    return item;
  }

  /** Takes `item` out wherever it waits (an aborted waiter); false when it is not here. */
  remove(item: T): boolean {
    for (let i = 0; i < this.segments.length; i++) {
      const seg = this.segments[i]!;
      if ('barrier' in seg) {
        if (seg.barrier !== item) continue;
        this.segments.splice(i, 1);
        this.total--;
        this.mergeAt(i - 1);
        return true;
      }
      for (const [client, lane] of seg.lanes) {
        const at = lane.indexOf(item);
        if (at < 0) continue;
        lane.splice(at, 1);
        if (lane.length === 0) seg.lanes.delete(client);
        if (seg.lanes.size === 0) {
          this.segments.splice(i, 1);
          this.mergeAt(i - 1);
        }
        this.uncount(client);
        this.total--;
        return true;
      }
    }
    return false;
  }

  /** The client with the most items waiting (the first such in arrival order), if any. */
  heaviest(): { client: string; count: number } | undefined {
    let best: { client: string; count: number } | undefined;
    for (const [client, count] of this.counts) if (!best || count > best.count) best = { client, count };
    return best;
  }

  /** Takes out and returns `client`'s newest item. */
  popNewest(client: string): T | undefined {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const seg = this.segments[i]!;
      const item = 'lanes' in seg ? seg.lanes.get(client)?.at(-1) : undefined;
      if (item !== undefined) return this.remove(item) ? item : undefined;
    }
    return undefined;
  }

  /** Empties the line, returning everything in it. */
  drain(): T[] {
    const all = this.segments.flatMap((s) => ('barrier' in s ? [s.barrier] : [...s.lanes.values()].flat()));
    this.segments.length = 0;
    this.counts.clear();
    this.total = 0;
    return all;
  }

  private uncount(client: string): void {
    const n = this.countOf(client) - 1;
    if (n > 0) this.counts.set(client, n);
    else this.counts.delete(client);
  }

  /** Two groups that a removed barrier separated become one round (the later lanes join behind). */
  private mergeAt(i: number): void {
    const a = this.segments[i];
    const b = this.segments[i + 1];
    if (!a || !b || !('lanes' in a) || !('lanes' in b)) return;
    for (const [client, lane] of b.lanes) {
      const own = a.lanes.get(client);
      if (own) own.push(...lane);
      else a.lanes.set(client, lane);
    }
    this.segments.splice(i + 1, 1);
  }
}
