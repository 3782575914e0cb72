// A signal aborted by either of two, unlinked by hand: AbortSignal.any() on a signal that lives
// as long as the daemon leaves one dependant per call on some Node releases (nodejs/node#55351).

/** `signal` aborts when `a` or `b` does (with its reason); `unlink()` drops the listeners. */
export function linkedSignal(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; unlink: () => void } {
  const ac = new AbortController();
  const fromA = () => ac.abort(a.reason);
  const fromB = () => ac.abort(b.reason);
  const unlink = () => {
    a.removeEventListener('abort', fromA);
    b.removeEventListener('abort', fromB);
  };
  if (a.aborted) fromA();
  else if (b.aborted) fromB();
  else {
    a.addEventListener('abort', fromA, { once: true });
    b.addEventListener('abort', fromB, { once: true });
  }
  return { signal: ac.signal, unlink };
}
