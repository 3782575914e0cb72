// Parent commands shared by several command files (`bench`, `models`, ...). Kept apart from
// index.ts so command modules never import the registry that imports them.
import type { Command } from 'commander';

export type CommandRegistrar = (program: Command) => void;

/** Returns the parent command `name` (e.g. `bench`, `models`), creating it once. */
export function group(program: Command, name: string, description: string): Command {
  const existing = program.commands.find((c) => c.name() === name);
  return existing ?? program.command(name).description(description);
}
