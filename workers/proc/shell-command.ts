/**
 * Shell commands Polly runs for a repository (acceptance checks, the worktree setup command) and
 * their one result shape. A red command is data, not an error: the result says how it ended, as
 * execa's result with `reject: false` does (https://github.com/sindresorhus/execa/blob/main/docs/api.md#result).
 */

/** How one shell command ended. */
export interface CommandResult {
  /** The command line as given (run by `sh -c`). */
  command: string;
  /** Exit code; null when it was ended by a signal (e.g. the timeout's kill). */
  exitCode: number | null;
  /** True when it ran past its timeout and was killed. */
  timedOut: boolean;
  /** Wall time, ms. */
  durationMs: number;
  /** Tail of the combined stdout+stderr (bounded; the bound is the caller's). */
  output: string;
}
