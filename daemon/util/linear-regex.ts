// Regular expressions from clients run on text a model wrote, on the event loop: V8's linear-time
// engine (the `l` flag) runs them, so no pattern can backtrack for hours (^(a+)+$ on 40 a's and a !).
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--enable-experimental-regexp-engine');

/** Escapes that mean something else without the `u` flag, which the linear engine lacks. */
const UNICODE_ONLY = /\\[pP]\{|\\u\{|[\u{10000}-\u{10FFFF}]/u;

/**
 * `source` (checked as a `u` pattern first, as JSON Schema reads it) compiled for the linear
 * engine, or the reason it cannot be: lookaround and backreferences need backtracking, and
 * `\p{…}`, `\u{…}` or characters past U+FFFF need Unicode mode.
 */
export function linearRegExp(source: string): RegExp | string {
  try {
    new RegExp(source, 'u');
  } catch (e) {
    return `must be a valid regular expression (${(e as Error).message})`;
  }
  if (UNICODE_ONLY.test(source))
    return 'must not use \\p{…}, \\u{…} or characters past U+FFFF: patterns run in a linear-time engine without Unicode mode';
  try {
    return new RegExp(source, 'l');
  } catch {
    return 'must run in linear time: no lookahead, lookbehind or backreferences (a backtracking pattern on model output could hold the server)';
  }
}
