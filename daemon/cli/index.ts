// Every CLI command registers itself here: one file per command under daemon/cli/.
// Add a command by importing its registrar and appending it to `registrars`.
import type { Command } from 'commander';
import { registerBenchConstrained } from './bench-constrained.js';

export type CommandRegistrar = (program: Command) => void;

/** Returns the parent command `name` (e.g. `bench`, `models`), creating it once. */
export function group(program: Command, name: string, description: string): Command {
  const existing = program.commands.find((c) => c.name() === name);
  return existing ?? program.command(name).description(description);
}

export const registrars: CommandRegistrar[] = [registerBenchConstrained];
