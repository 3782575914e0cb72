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

/** A load option the engine refused (`err.option`), as a usage error naming the flag that set it. */
export function optionError(
  err: { option?: string | undefined; detail?: string | undefined },
  flags: Record<string, string>,
): CliError | undefined {
  const flag = err.option === undefined ? undefined : flags[err.option];
  return flag && err.detail ? new CliError(`${flag}: ${err.detail}`, 2) : undefined;
}
