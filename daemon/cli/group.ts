// Parent commands shared by several command files (`bench`, `models`, ...). Kept apart from
// index.ts so command modules never import the registry that imports them.
import type { Command } from 'commander';

export type CommandRegistrar = (program: Command) => void;

const GROUPS = {
  bench: 'benchmarks (a summary, or JSON with --json)',
  config: 'inspect and validate configuration',
  lora: 'LoRA adapters: checks',
  models: 'model folders: synthesise, inspect',
  mqtt: 'MQTT broker identities',
  policy: 'policy episodes: a model drives a robot until the task is done and checked',
  prerouter: 'prerouter heads: calibrate on a text, evaluate recall',
  sim: 'run a simulated robot controller that connects over MQTT (--broker) or the daemon WebSocket (--ws)',
} as const;

/** Returns the parent command `name` (e.g. `bench`, `models`), creating it once. */
export function group(program: Command, name: keyof typeof GROUPS): Command {
  const existing = program.commands.find((c) => c.name() === name);
  return existing ?? program.command(name).description(GROUPS[name]);
}
