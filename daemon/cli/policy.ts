// `brainstem policy run "instruction" --robot R ...`: starts an episode on the running daemon and
// follows it to its end (lines on a terminal, events as JSON lines with --json); the exit code
// says how it ended. `brainstem policy report ID`: the report of a recorded episode.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { compileContext } from '../policy/context/compile.js';
import { readEpisodeMeta, recordEvents } from '../policy/episode/records.js';
import { type EpisodeReport, reportText, streamedReport } from '../policy/episode/report.js';
import type { EpisodeEvent, FinalState } from '../policy/episode/types.js';
import { DaemonRpc } from './daemon-rpc.js';
import { CliError } from './exit.js';
import { group } from './group.js';
import { registerPolicyEval, registerPolicyReplay } from './policy-workcell.js';
import {
  positive,
  providerOf,
  verifierGiven,
  verifierProviderOf,
  withProviderOptions,
  withVerifierOptions,
  type ProviderOptions,
  type VerifierOptions,
} from './policy-options.js';

/** Exit code by final state: 0 done; 1 and 2 stay the CLI's own errors. */
export const EXIT_BY_STATE: Record<FinalState, number> = {
  done: 0,
  gave_up: 3,
  budget_exhausted: 4,
  stopped: 5,
  failed: 6,
};

interface RunOptions extends ProviderOptions, VerifierOptions {
  robot: string;
  check?: string;
  task?: string;
  predicates?: string;
  decisions?: string;
  wallS?: string;
  context?: string;
  config?: string;
  json?: boolean;
}

/** The context compiler's input file compiled here (paths relative to it), as policy.start references. */
async function referencesOf(file: string): Promise<{ text?: string; image_url?: string; label?: string }[]> {
  let input: unknown;
  try {
    input = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new CliError(`--context: cannot read ${file} as JSON (${(e as Error).message})`, 2);
  }
  const compiled = await compileContext(input, { resolvePath: async (p) => resolve(dirname(file), p) }).catch(
    (e: Error) => {
      throw new CliError(`--context: ${e.message}`, 2);
    },
  );
  return compiled.parts.map((p) =>
    p.type === 'text'
      ? { text: p.text }
      : { image_url: `data:${p.mime};base64,${Buffer.from(p.bytes).toString('base64')}`, label: p.label },
  );
}

/** policy.start's check from --check, --task, --predicates (a task or predicates imply the scene check) and --verifier-*. */
function checkOf(o: RunOptions): Record<string, unknown> {
  const kind = o.check ?? (o.task || o.predicates ? 'scene' : 'none');
  if (!['none', 'operator', 'scene', 'verifier'].includes(kind))
    throw new CliError(`--check: must be none, operator, scene or verifier, got ${JSON.stringify(kind)}`, 2);
  if (kind !== 'scene' && (o.task || o.predicates))
    throw new CliError(`--task and --predicates: are only for --check scene, got --check ${kind}`, 2);
  if (kind !== 'verifier' && verifierGiven(o))
    throw new CliError(`--verifier-*: options are only for --check verifier, got --check ${kind}`, 2);
  return {
    kind,
    ...(kind === 'verifier' ? { provider: verifierProviderOf(o) } : {}),
    ...(o.task ? { task: o.task } : {}),
    ...(o.predicates ? { predicates: o.predicates.split(',').map((s) => s.trim()) } : {}),
  };
}

/** One terminal line for the events worth a line. */
function line(e: EpisodeEvent): string | null {
  const d = `#${e.decision as number}`;
  switch (e.type) {
    case 'started':
      return `episode ${e.episode} on ${e.robot as string} (${e.provider as string}, check ${e.check as string})`;
    case 'request':
      return e.error !== undefined
        ? `${d} ${(e.tool as string) ?? 'reply'} not executed: ${e.error as string}`
        : `${d} ${e.tool as string} ${JSON.stringify(e.arguments)}`;
    case 'outcome':
      return `${d} ${e.tool as string} → ${e.status as string}: ${e.message as string}`;
    case 'check_pending':
      return `${d} done claimed: waiting for policy.confirm`;
    case 'check':
      return `${d} check ${e.complete ? 'confirmed' : 'rejected'}: ${e.reason as string}`;
    case 'record_limit':
      return `record: ${e.message as string}`;
    case 'finished':
      return `${e.state as string}: ${e.reason as string}`;
    default:
      return null;
  }
}

export function registerPolicy(program: Command): void {
  const policy = group(program, 'policy');
  const run = withProviderOptions(
    policy
      .command('run')
      .description('start an episode on the running daemon and follow it to its end')
      .argument('<instruction>', 'the task, in words')
      .requiredOption('-r, --robot <id>', 'served robot id'),
  )
    .option('--check <kind>', 'none, operator, scene or verifier (default none; scene with --task or --predicates)')
    .option('--task <name>', "scene: the scene's task whose predicates must hold")
    .option('--predicates <names>', 'scene: instead of a task, comma-separated predicates that must hold');
  withVerifierOptions(run)
    .option('--context <file>', 'context compiler input (JSON: goals, demonstrations), compiled here and sent')
    .option('--decisions <n>', 'decision budget')
    .option('--wall-s <n>', 'wall-time budget in seconds')
    .option('-c, --config <file>', 'config file merged over configs/brainstem.yaml (finds the daemon by data_dir)')
    .option('--json', 'print every event as a JSON line')
    .action(async (instruction: string, o: RunOptions) => {
      const check = checkOf(o);
      const provider = providerOf(o); // the options are checked before the daemon is asked
      const config = loadConfig({ file: o.config });
      let finish: (state: FinalState) => void = () => undefined;
      const ended = new Promise<FinalState>((resolve) => (finish = resolve));
      let id: string | undefined;
      const rpc = await DaemonRpc.connect(config, (method, params) => {
        if (method !== 'policy.event') return;
        const e = params as EpisodeEvent;
        if (o.json) process.stdout.write(`${JSON.stringify(e)}\n`);
        else {
          const l = line(e);
          if (l) process.stdout.write(`${l}\n`);
        }
        if (e.type === 'finished') finish(e.state as FinalState);
      });
      const budget = { decisions: positive('--decisions', o.decisions), wall_s: positive('--wall-s', o.wallS) };
      const references = o.context ? await referencesOf(o.context) : undefined;
      // Before policy.start answers there is no id to stop: closing the connection stops whatever began.
      const interrupted = new CliError(
        'interrupted (Ctrl-C) before the daemon answered policy.start; the connection is closed, which stops the episode if it had begun',
        130,
      );
      const onSignal = () =>
        void (id ? rpc.call('policy.stop', { id }).catch(() => undefined) : rpc.close(interrupted));
      process.once('SIGINT', onSignal);
      try {
        const params = {
          robot: o.robot,
          instruction,
          provider,
          check,
          budget: Object.fromEntries(Object.entries(budget).filter(([, v]) => v !== undefined)),
          ...(references ? { context: { references } } : {}),
        };
        const size = Buffer.byteLength(JSON.stringify(params));
        if (size > config.server.max_message_bytes)
          throw new CliError(
            `the request is ${size} bytes, over the daemon's server.max_message_bytes (${config.server.max_message_bytes}): a smaller --context, or raise that limit`,
            2,
          );
        const started = (await rpc.call('policy.start', params)) as { id: string };
        id = started.id;
        const state = await Promise.race([
          ended,
          rpc.closed.then(() => {
            throw new CliError('the daemon closed the connection before the episode ended', 1);
          }),
        ]);
        process.exitCode = EXIT_BY_STATE[state];
      } finally {
        process.off('SIGINT', onSignal);
        await rpc.close();
      }
    });
  policy
    .command('report')
    .description("print a recorded episode's decisions, time, tokens, outcomes and failures")
    .argument('<id>', 'episode id (ep-…)')
    .option('-c, --config <file>', 'config file merged over configs/brainstem.yaml (finds data_dir)')
    .option('--json', 'print the report as JSON')
    .action(async (id: string, o: { config?: string; json?: boolean }) => {
      const config = loadConfig({ file: o.config });
      let r: EpisodeReport;
      try {
        // The events stream through the tally: a long record is hundreds of MB.
        r = await streamedReport(recordEvents(config.data_dir, id), readEpisodeMeta(config.data_dir, id));
      } catch (err) {
        throw new CliError((err as Error).message, 2);
      }
      process.stdout.write(o.json ? `${JSON.stringify(r, null, 2)}\n` : reportText(r));
    });
  registerPolicyEval(policy);
  registerPolicyReplay(policy);
}
