// Every CLI command registers itself here: one file per command under daemon/cli/.
import type { Command } from 'commander';

export type CommandRegistrar = (program: Command) => void;

export const registrars: CommandRegistrar[] = [];
