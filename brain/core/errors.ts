/**
 * The one error type of Polly.
 *
 * Expected outcomes (a gate denial, a refused workflow, a red test run) are data, never a
 * PollyError. A PollyError is a fault or bad input; its `code` is one of the documented codes
 * below, and callers branch on `code`, never on message text. A message says what happened, the
 * offending value, and what to do next.
 */

/**
 * Documented error codes. Each code maps to a CLI exit code (see {@link exitCodeFor}):
 * 2 for bad input, 1 for a failed outcome.
 *
 * | code               | exit | meaning                                                         |
 * |--------------------|------|-----------------------------------------------------------------|
 * | `bad_input`        | 2    | a flag, argument or value the command cannot accept              |
 * | `unknown_command`  | 2    | `polly <name>` where no such command exists                       |
 * | `not_a_git_repo`   | 2    | the command needs a git repository and the directory is not one   |
 * | `config_invalid`   | 2    | `.polly/config.yaml` cannot be parsed or fails validation         |
 * | `workflow_invalid` | 2    | a workflow file fails its schema (message has file:line:column)   |
 * | `plan_invalid`     | 2    | a plan file or a proposed plan fails its schema                   |
 * | `not_initialized`  | 1    | no `.polly/` in this repository yet (`polly init`)                |
 * | `registry_corrupt` | 1    | `.polly/registry.json` cannot be read; names the file and backup   |
 * | `registry_newer`   | 1    | the registry was written by a newer Polly (schema too new)         |
 * | `lock_timeout`     | 1    | the registry lock could not be taken in time                      |
 * | `not_found`        | 1    | a task, plan, run, PR or workflow id that does not exist           |
 * | `conflict`         | 1    | the operation does not apply to the current state                 |
 * | `already_running`  | 1    | a second Brain for the same repository (names the first's pid)     |
 * | `agent_missing`    | 1    | a worker CLI is not installed                                      |
 * | `agent_refused`    | 1    | a worker CLI refuses to start as configured (e.g. root, no IS_SANDBOX) |
 * | `git_failed`       | 1    | a git command failed; keeps its stderr                             |
 * | `protected_path`   | 1    | a task's commit changes protected paths its plan did not declare (workers/git/protected-paths.ts) |
 * | `forge_failed`     | 1    | the forge (GitHub or local) rejected a request                     |
 * | `not_built`        | 1    | a placeholder: the feature is not built yet                        |
 * | `sandbox_unavailable` | 1 | the OS sandbox cannot start here and `workers.allow_unconfined` is off (names the fix) |
 * | `stopping`         | 1    | the Brain is stopping: new work (a worker turn) is not started; the next Brain starts it |
 * | `host_failed`      | 1    | a remote host of `workers.hosts` cannot be reached, or refuses (names the host and the fix) |
 * | `internal`         | 1    | a bug in Polly                                                     |
 */
export type PollyErrorCode =
  | 'bad_input'
  | 'unknown_command'
  | 'not_a_git_repo'
  | 'config_invalid'
  | 'workflow_invalid'
  | 'plan_invalid'
  | 'not_initialized'
  | 'registry_corrupt'
  | 'registry_newer'
  | 'lock_timeout'
  | 'not_found'
  | 'conflict'
  | 'already_running'
  | 'agent_missing'
  | 'agent_refused'
  | 'git_failed'
  | 'protected_path'
  | 'forge_failed'
  | 'not_built'
  | 'sandbox_unavailable'
  | 'stopping'
  | 'host_failed'
  | 'internal';

const BAD_INPUT_CODES: ReadonlySet<PollyErrorCode> = new Set<PollyErrorCode>([
  'bad_input',
  'unknown_command',
  'not_a_git_repo',
  'config_invalid',
  'workflow_invalid',
  'plan_invalid',
]);

export interface PollyErrorOptions {
  /** The underlying error, kept for diagnostics. */
  cause?: unknown;
  /** Structured details for `--json` output (never secrets). */
  details?: Record<string, unknown>;
}

/** Polly's single error type. `code` is documented in {@link PollyErrorCode}. */
export class PollyError extends Error {
  readonly code: PollyErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: PollyErrorCode, message: string, options: PollyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PollyError';
    this.code = code;
    this.details = options.details;
  }
}

/** True when `value` is a {@link PollyError}, optionally with the given code. */
export function isPollyError(value: unknown, code?: PollyErrorCode): value is PollyError {
  return value instanceof PollyError && (code === undefined || value.code === code);
}

/** The CLI exit code for an error: 2 for bad input, 1 for everything else. */
export function exitCodeFor(error: unknown): 1 | 2 {
  return isPollyError(error) && BAD_INPUT_CODES.has(error.code) ? 2 : 1;
}
