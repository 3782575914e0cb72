// A policy service stand-in for the policy.* transport: every id is a running episode whose
// events the test emits to the listeners the methods registered.
import type { PolicyService, StartRequest } from '../../daemon/policy/episode/service.js';

/** A policy service with every id a running episode, whose listeners the test calls; the
 *  requests of policy.start are kept in `started`. */
export function stubPolicy() {
  const listeners = new Set<(e: unknown) => void>();
  const started: StartRequest[] = [];
  const policy = {
    startEpisode: async (req: StartRequest) => `ep-${started.push(req)}`,
    stopIfRunning: () => undefined,
    episode: () => ({ state: 'deciding' }),
    listen: (_id: string, l: (e: unknown) => void) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    summary: (id: string) => ({ id, state: 'deciding' }),
  } as unknown as PolicyService;
  return { policy, listeners, started, emit: (e: unknown) => listeners.forEach((l) => l(e)) };
}
