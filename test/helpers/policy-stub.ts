// A policy service stand-in for the policy.* transport: every id is a running episode whose
// events the test emits to the listeners the methods registered.
import type { PolicyService, StartRequest } from '../../daemon/policy/episode/service.js';

/**
 * A policy service with every id a running episode, whose listeners the test calls; policy.start
 * keeps its requests in `started` and starts ep-1, ep-2, … that run until `end(id)`; the
 * connection-close stops land in `stopped`.
 */
export function stubPolicy() {
  const listeners = new Set<(e: unknown) => void>();
  const started: StartRequest[] = [];
  const ends = new Map<string, () => void>();
  const finished = new Map<string, Promise<string>>();
  const stopped: string[] = [];
  const running = (id: string) => {
    if (!finished.has(id)) finished.set(id, new Promise((resolve) => ends.set(id, () => resolve('done'))));
    return finished.get(id)!;
  };
  const policy = {
    episode: (id: string) => ({ state: 'deciding', finished: running(id) }),
    startEpisode: async (req: StartRequest) => `ep-${started.push(req)}`,
    stopIfRunning: (id: string) => void stopped.push(id),
    listen: (_id: string, l: (e: unknown) => void) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    summary: (id: string) => ({ id, state: 'deciding' }),
  } as unknown as PolicyService;
  return {
    policy,
    listeners,
    started,
    stopped,
    emit: (e: unknown) => listeners.forEach((l) => l(e)),
    end: (id: string) => ends.get(id)?.(),
  };
}
