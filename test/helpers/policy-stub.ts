// A policy service stand-in for the policy.* transport: every id is a running episode whose
// events the test emits to the listeners the methods registered.
import type { PolicyService } from '../../daemon/policy/episode/service.js';

/** A policy service with every id a running episode, whose listeners the test calls. */
export function stubPolicy() {
  const listeners = new Set<(e: unknown) => void>();
  const policy = {
    episode: () => ({ state: 'deciding' }),
    listen: (_id: string, l: (e: unknown) => void) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    summary: (id: string) => ({ id, state: 'deciding' }),
  } as unknown as PolicyService;
  return { policy, listeners, emit: (e: unknown) => listeners.forEach((l) => l(e)) };
}
