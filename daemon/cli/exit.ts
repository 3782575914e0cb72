// CLI errors that carry an exit code and a readable message (never a stack trace).
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The engine's refusal of a routing width the model cannot take, as a usage error naming the flag that set it. */
export function routingWidthError(message: string, flag: string): CliError | undefined {
  const m = /topK \(routing width\) must be between 1 and (\d+) for this model, got (-?\d+)/.exec(message);
  return m
    ? new CliError(`${flag}: must be between 1 and ${m[1]} for this model (its experts per token), got ${m[2]}`, 2)
    : undefined;
}
