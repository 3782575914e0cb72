// Reconnect delays: doubling from min to max with "equal jitter" (uniform in [cap/2, cap]),
// so a fleet of clients does not reconnect in lockstep after a broker restart.

/** Delay before reconnect attempt `attempt` (1 = first retry), in ms; `random` returns [0, 1). */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number): number {
  const cap = Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
  return Math.round(cap / 2 + (random() * cap) / 2);
}
