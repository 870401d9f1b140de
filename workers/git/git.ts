/**
 * The one way Polly runs git: non-interactive, bounded in time, with a scrubbed environment.
 *
 * Every call:
 * - gets `--no-pager` and `GIT_PAGER=cat` / `PAGER=cat` (never a pager),
 * - gets `GIT_EDITOR=true`, `GIT_SEQUENCE_EDITOR=true`, `GIT_MERGE_AUTOEDIT=no` (never an editor:
 *   `GIT_EDITOR` wins over `core.editor`, `VISUAL` and `EDITOR`, see git-var(1)),
 * - gets `GIT_TERMINAL_PROMPT=0` and `GCM_INTERACTIVE=never` (never a credential prompt) and no stdin,
 * - gets `LC_ALL=C.UTF-8` (untranslated messages in errors and porcelain markers),
 * - runs with every `GIT_*` variable of the parent removed (Polly may run inside a git hook, where
 *   `GIT_DIR`, `GIT_INDEX_FILE`, … would redirect it), then the variables Polly sets added back,
 * - is killed after a timeout (default 120 s),
 * - runs no repository hook and no fsmonitor: {@link SAFE_GIT_CONFIG_ARGS} come first on every
 *   command line (`-c core.hooksPath=/dev/null`: git looks hooks up as `/dev/null/<name>`, which
 *   cannot exist; `-c core.fsmonitor=false`; see githooks(5) and git-config(1) `core.hooksPath`,
 *   `core.fsmonitor`), and never looks inside a nested repository for dirt
 *   (`-c diff.ignoreSubmodules=dirty`, ./nested-repos.ts). A `-c` on the command line wins over every config file, so a hook path or
 *   fsmonitor command a worker wrote into `.git/config` or a `config.worktree` is never run by
 *   Polly. Callers add `--no-verify` to `commit` and `push` as well (belt and braces).
 *
 * Config keys that run programs and are not overridden here (`core.sshCommand`,
 * `credential.helper`, `remote.<name>.uploadpack`, `filter.<driver>.*`, `url.<base>.insteadOf`, …)
 * are the user's to set. A worker cannot write them: inside the sandbox the common git dir is
 * read-only (workers/git/git-policy.ts), and without a sandbox the ref guard
 * (workers/git/ref-guard.ts) compares the repository's config files around every turn and restores
 * them before Polly runs git again.
 *
 * A failure becomes a {@link PollyError} with code `git_failed` whose `details` keep the command,
 * the cwd, the exit code and stderr. Callers that expect a non-zero exit (e.g. `merge-base
 * --is-ancestor`) list it in `okExitCodes` and branch on `exitCode`.
 */
import { execa } from 'execa';
import { PollyError } from '../../brain/core/errors.js';
import { signalGroup } from '../proc/kill.js';

/** What one git call produced. `stdout`/`stderr` are untrimmed text. */
export interface GitResult {
  /** `git <args…>` as run, for messages and logs. */
  command: string;
  cwd: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
}

export interface GitCallOptions {
  /** Directory git runs in (a worktree or the repository root). */
  cwd: string;
  /** Extra variables Polly sets for this call (may include GIT_*, e.g. GIT_INDEX_FILE). */
  env?: Record<string, string>;
  /** Text written to git's stdin; stdin is closed (`ignore`) when absent. */
  input?: string;
  /** Exit codes that are results rather than failures (0 is always accepted). */
  okExitCodes?: number[];
  /** Per-call timeout in ms; defaults to the runner's. */
  timeoutMs?: number;
}

/** Runs git. The real one is {@link createGitRunner}; tests use the real one against temp repos. */
export interface GitRunner {
  /**
   * Run `git --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.ignoreSubmodules=dirty <args…>`.
   * @returns the result when the exit code is 0 or in `okExitCodes`.
   * @throws PollyError `git_failed` (other exit code, timeout, git missing) with details
   *   `{command, cwd, exitCode, stderr, timedOut}`.
   */
  run(args: readonly string[], options: GitCallOptions): Promise<GitResult>;
  /** The environment a call would get (scrubbed parent + Polly's settings + `extra`). */
  env(extra?: Record<string, string>): Record<string, string>;
}

export interface GitRunnerOptions {
  /** The parent environment to start from (GIT_* are removed from it). Default `process.env`. */
  baseEnv?: NodeJS.ProcessEnv;
  /**
   * Variables Polly sets on every call, added after scrubbing (may include GIT_*, e.g.
   * `GIT_CONFIG_GLOBAL` in tests). They cannot override the non-interactive settings.
   */
  env?: Record<string, string>;
  /** Default timeout per call, ms. Default 120 000. */
  timeoutMs?: number;
  /** The git executable. Default `git` (from PATH). */
  gitBinary?: string;
}

/**
 * `-c` options placed before every subcommand Polly runs: no repository hooks, no fsmonitor, and
 * no git run inside a nested repository to ask whether it is dirty (`diff.ignoreSubmodules=dirty`:
 * `diff`, `status` and `commit` compare a gitlink's commit only; that inner git would read the
 * nested repository's own config, which a worker writes — see ./nested-repos.ts, which also keeps
 * `git add` out of them).
 * Source: git-config(1) (`core.hooksPath`, `core.fsmonitor`, `diff.ignoreSubmodules`), git(1) (`-c`
 * wins over config files).
 */
export const SAFE_GIT_CONFIG_ARGS: readonly string[] = Object.freeze(['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'diff.ignoreSubmodules=dirty']);

/** The settings that make git non-interactive; applied last so nothing overrides them. */
export const NON_INTERACTIVE_GIT_ENV: Readonly<Record<string, string>> = Object.freeze({
  GIT_EDITOR: 'true',
  GIT_SEQUENCE_EDITOR: 'true',
  GIT_MERGE_AUTOEDIT: 'no',
  GIT_PAGER: 'cat',
  PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  // Untranslated messages and markers (e.g. the `locked initializing` reason of an unfinished add),
  // still UTF-8 for what the setup command and hooks print.
  LC_ALL: 'C.UTF-8',
  LANGUAGE: 'C',
});

/**
 * `parent` without any `GIT_*` variable, plus `extra`, plus {@link NON_INTERACTIVE_GIT_ENV}.
 * Pure; undefined values are dropped.
 */
export function scrubbedGitEnv(parent: NodeJS.ProcessEnv = process.env, extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parent)) {
    if (v !== undefined && !k.startsWith('GIT_')) out[k] = v;
  }
  return { ...out, ...extra, ...NON_INTERACTIVE_GIT_ENV };
}

const MAX_BUFFER = 512 * 1024 * 1024;

/** Create the real git runner (spawns `git` through execa; no shell). */
export function createGitRunner(options: GitRunnerOptions = {}): GitRunner {
  const gitBinary = options.gitBinary ?? 'git';
  const defaultTimeout = options.timeoutMs ?? 120_000;
  const baseEnv = options.baseEnv ?? process.env;
  const pollyEnv = options.env ?? {};
  const envFor = (extra: Record<string, string> = {}) => scrubbedGitEnv(baseEnv, { ...pollyEnv, ...extra });

  return {
    env: envFor,
    async run(args, call) {
      const fullArgs = ['--no-pager', ...SAFE_GIT_CONFIG_ARGS, ...args];
      const command = `git ${args.join(' ')}`;
      const timeout = call.timeoutMs ?? defaultTimeout;
      // Own process group, killed as a whole on timeout: a hook or alias that started a child
      // keeps git's pipes open after git itself is killed.
      const subprocess = execa(gitBinary, fullArgs, {
        cwd: call.cwd,
        env: envFor(call.env),
        extendEnv: false,
        detached: true,
        reject: false,
        stripFinalNewline: false,
        maxBuffer: MAX_BUFFER,
        ...(call.input === undefined ? { stdin: 'ignore' as const } : { input: call.input }),
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        signalGroup(subprocess.pid, 'SIGKILL');
      }, timeout);
      const r = await subprocess.finally(() => clearTimeout(timer));
      const stdout = typeof r.stdout === 'string' ? r.stdout : '';
      const stderr = typeof r.stderr === 'string' ? r.stderr : '';
      const exitCode = typeof r.exitCode === 'number' ? r.exitCode : -1;
      const result: GitResult = { command, cwd: call.cwd, exitCode, stdout, stderr, durationMs: r.durationMs };
      if (r.code === 'ENOENT' && r.exitCode === undefined) {
        // Either git is missing or cwd does not exist; say which.
        throw new PollyError(
          'git_failed',
          `cannot run ${command} in ${call.cwd}: ${r.originalMessage ?? r.shortMessage}. Check that git is installed and on PATH and that the directory exists.`,
          { cause: r, details: { command, cwd: call.cwd, exitCode: null, stderr, timedOut: false } },
        );
      }
      if (timedOut) {
        throw new PollyError(
          'git_failed',
          `${command} in ${call.cwd} did not finish within ${timeout} ms and was killed. ` +
            `stderr: ${tail(stderr) || '(empty)'}. Check for a hook or filter that waits for input, or a very large repository.`,
          { cause: r, details: { command, cwd: call.cwd, exitCode: null, stderr, timedOut: true } },
        );
      }
      if (exitCode !== 0 && !(call.okExitCodes ?? []).includes(exitCode)) {
        throw new PollyError('git_failed', `${command} failed in ${call.cwd} (exit ${exitCode}): ${tail(stderr) || tail(stdout) || '(no output)'}`, {
          cause: r,
          details: { command, cwd: call.cwd, exitCode, stderr, timedOut: false },
        });
      }
      return result;
    },
  };
}

/** Last ~1000 characters of `text`, trimmed (for messages). */
function tail(text: string): string {
  const t = text.trim();
  return t.length > 1000 ? `…${t.slice(-1000)}` : t;
}

/** First line of stdout, trimmed (object ids, ref names). */
export function firstLine(result: GitResult): string {
  const nl = result.stdout.indexOf('\n');
  return (nl === -1 ? result.stdout : result.stdout.slice(0, nl)).trim();
}
