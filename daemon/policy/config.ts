// The `policy:` config section: episode defaults (budget, images, history) and how long episode
// records are kept under <data_dir>/episodes.
import { int, list, obj, str, type Infer } from '../../robot/common/validation/builders.js';
import { grantProblem } from './providers/api-key-grants.js';

export const policySchema = obj(
  {
    budget: obj(
      {
        decisions: int({
          min: 1,
          max: 100_000,
          default: 100,
          doc: 'most decisions per episode (malformed and rejected ones count); policy.start budget.decisions overrides',
        }),
        wall_s: int({
          min: 1,
          max: 86_400,
          default: 1800,
          doc: 'longest episode in seconds, checked before each decision and cancelling a model call or check under way (never a motion); policy.start budget.wall_s overrides',
        }),
        prompt_tokens: int({
          min: 0,
          default: 0,
          doc: 'most prompt tokens over an episode, checked before each decision; 0 = no limit',
        }),
        completion_tokens: int({
          min: 0,
          default: 0,
          doc: 'most completion tokens over an episode, checked before each decision; 0 = no limit',
        }),
      },
      { doc: 'Default episode budget: the episode ends as budget_exhausted when one is spent' },
    ),
    api_key_envs: list(str({ nonEmpty: true, rule: grantProblem }), {
      doc: 'environment variables an openai provider of policy.start may name as its api_key_env: NAME (the daemon sends its value to any base_url the client names) or NAME=URL (only to base URLs at or under URL, e.g. OPENAI_API_KEY=https://api.openai.com/v1); empty = none',
    }),
    context_roots: list(str({ nonEmpty: true }), {
      doc: 'folders the file paths of a policy.start context (goal images, demonstration videos, frame folders, action logs) may be read from, besides <data_dir>/context (where relative paths start); symlinks resolved must stay inside; "~" = home, relative = from the working directory',
    }),
    image_max_side: int({
      min: 64,
      max: 1280,
      default: 1280,
      doc: 'camera frames sent to a model are scaled down to this longest side (px)',
    }),
    keep_images: int({ min: 0, max: 64, default: 4, doc: 'online camera images kept in the prompt, newest first' }),
    window_turns: int({
      min: 1,
      max: 1000,
      default: 12,
      doc: 'decisions sent verbatim; older ones become a host summary',
    }),
    summary_block: int({
      min: 1,
      max: 1000,
      default: 6,
      doc: 'turns moved into the host summary at a time: the prompt before the window changes once per block, so a local model re-reads its whole history only then (the window holds window_turns − summary_block + 1 to window_turns turns)',
    }),
    records: obj(
      {
        max_episodes: int({
          min: 1,
          max: 1_000_000,
          default: 200,
          doc: 'episode records kept in <data_dir>/episodes; the oldest go first',
        }),
        max_bytes: int({
          min: 1 << 20,
          default: 2 * 1024 ** 3,
          doc: 'largest total size of the episode records (bytes); the oldest go first. A running record, not counted, saves no more images past half of it (its events go on)',
        }),
        max_age_days: int({ min: 1, max: 3650, default: 30, doc: 'episode records older than this are removed' }),
      },
      { doc: 'Retention of episode records, applied when an episode starts (a running episode is never removed)' },
    ),
  },
  { doc: 'Policy episodes: a model drives a robot through its tools until the task is done and checked' },
);

export type PolicyConfig = Infer<typeof policySchema>;
