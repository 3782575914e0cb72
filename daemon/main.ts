#!/usr/bin/env node
// brainstem CLI entry: parses argv and hands over to one command module.
import { Command } from 'commander';
import { registrars } from './cli/index.js';
import { CliError } from './cli/exit.js';
import { ConfigError } from './config/load.js';
import { VERSION } from './version.js';

const program = new Command();
program
  .name('brainstem')
  .description('Serves MoE models from local SSD and drives robot arms from tool calls')
  .version(VERSION)
  .showHelpAfterError();
for (const register of registrars) register(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CliError || err instanceof ConfigError) {
    process.stderr.write(`brainstem: ${err.message}\n`);
    process.exit(err.exitCode);
  }
  // A file the command could not read or write: what and why, without a stack.
  const fs = err as NodeJS.ErrnoException;
  if (typeof fs?.code === 'string' && fs.syscall && fs.path) {
    process.stderr.write(`brainstem: ${fs.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`brainstem: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
