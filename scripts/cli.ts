// What the command-line tools share: the usage error (exit status 2) and reading the
// arguments with node:util parseArgs, its refusals (an unknown option, a missing value)
// turned into usage errors naming what was wrong.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Bad usage: the tool prints the message (and its usage text when asked to) and exits 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly showUsage = false,
  ) {
    super(message);
  }
}

/** parseArgs, a refusal of its thrown as a UsageError. */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    // parseArgs refuses unknown options and missing values with a TypeError saying which.
    if (err instanceof TypeError) throw new UsageError(err.message);
    throw err;
  }
}
