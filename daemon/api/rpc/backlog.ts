// The daemon-wide WebSocket backlog: every client's unsent replies plus its received messages
// not yet answered (bytes). Each client is bounded on its own (server.ws_max_buffered_bytes); past
// server.ws_total_buffered_bytes the client holding the most is disconnected, so many clients
// flooding at once cannot add up to gigabytes.

export interface BacklogHolder {
  /** Bytes this client holds now (as last reported through `grow`/`shrink`). */
  readonly backlogBytes: number;
  /** Disconnects the client; the holder leaves the tracker itself when its socket closes. */
  dropForBacklog(reason: string): void;
}

export class ServerBacklog {
  private readonly holders = new Set<BacklogHolder>();
  private total = 0;

  constructor(readonly limit: number) {}

  get bytes(): number {
    return this.total;
  }

  add(h: BacklogHolder): void {
    this.holders.add(h);
  }

  /** Forgets a closed client and what it held. */
  remove(h: BacklogHolder, held: number): void {
    if (this.holders.delete(h)) this.total -= held;
  }

  shrink(bytes: number): void {
    this.total -= bytes;
  }

  /** Counts `bytes` more; past the limit, drops the largest holders until the rest fit. */
  grow(bytes: number): void {
    this.total += bytes;
    while (this.total > this.limit) {
      let worst: BacklogHolder | undefined;
      for (const h of this.holders) if (!worst || h.backlogBytes > worst.backlogBytes) worst = h;
      if (!worst || worst.backlogBytes === 0) return;
      this.remove(worst, worst.backlogBytes);
      worst.dropForBacklog(`backlog exceeds server.ws_total_buffered_bytes (${this.limit}) across clients`);
    }
  }
}
