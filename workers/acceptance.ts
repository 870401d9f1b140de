/**
 * Acceptance checks: Polly itself runs a task's acceptance commands in the worktree — it never
 * trusts the agent's claim that tests pass.
 *
 * Each command runs through `/bin/sh -c` in its own process group (so a timeout kills the whole
 * tree, not just the shell), with stdin closed, `CI=true`, and the worker's PORT; with `sandbox`,
 * inside Polly's OS sandbox (the worktree writable, no network unless `acceptance.network`, and
 * nothing it starts outlives it). Output
 * (stdout+stderr interleaved) is kept, bounded to its tail.
 */
import type { AgentSandbox } from './agents/agent-adapter.js';
import { confinedSpawn, runShellCommand, type CommandResult } from './proc/shell-command.js';

export interface AcceptanceOptions {
  cwd: string;
  commands: string[];
  /** Seconds each command may run (config `acceptance.timeout`). */
  timeoutSeconds: number;
  env?: NodeJS.ProcessEnv;
  /** Bytes of output kept per command (the tail). Default 16 KiB. */
  keepBytes?: number;
  /** Stop at the first failing command (default true). */
  stopOnFailure?: boolean;
  /** Run each command in Polly's OS sandbox (workers/sandbox/command-sandbox.ts); null or absent: unconfined. */
  sandbox?: AgentSandbox | null;
  signal?: AbortSignal;
  /** Told as each command starts (e.g. to show which check runs now). */
  onCommand?: (command: string) => void;
  /** Every output chunk of the running command, in order (e.g. to follow it in a log file). */
  onOutput?: (chunk: Buffer) => void;
}

export interface AcceptanceOutcome {
  /** True when every command exited 0 within its time. */
  green: boolean;
  results: CommandResult[];
}

/** Run one command; never throws (a spawn failure is a result with exitCode null). */
export function runCheck(command: string, options: Omit<AcceptanceOptions, 'commands'>): Promise<CommandResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.env ?? process.env)) if (v !== undefined) env[k] = v;
  return runShellCommand(command, {
    cwd: options.cwd,
    env: { ...env, CI: 'true' },
    timeoutMs: options.timeoutSeconds * 1000,
    keepBytes: options.keepBytes ?? 16 * 1024,
    timeoutNote: () => `\n[polly] timed out after ${options.timeoutSeconds}s\n`,
    spawnErrorNote: (error) => `\n[polly] could not start the check: ${error.message}\n`,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(options.sandbox ? { wrap: (spec) => confinedSpawn(options.sandbox!, spec) } : {}),
  });
}

/**
 * Run the acceptance commands in order.
 * @returns green iff every command exited 0; results for each command run.
 */
export async function runAcceptance(options: AcceptanceOptions): Promise<AcceptanceOutcome> {
  const results: CommandResult[] = [];
  for (const command of options.commands) {
    options.onCommand?.(command);
    const result = await runCheck(command, options);
    results.push(result);
    if (result.exitCode !== 0 && options.stopOnFailure !== false) break;
  }
  const green = results.length === options.commands.length && results.every((r) => r.exitCode === 0);
  return { green, results };
}

/** The feedback an agent gets after a red run: which command failed and its output tail. */
export function formatCheckFeedback(results: CommandResult[]): string {
  const failed = results.filter((r) => r.exitCode !== 0);
  if (failed.length === 0) return 'All acceptance checks passed.';
  return [
    'Polly ran the acceptance checks and they are red. Fix the code so that they pass; do not change the checks.',
    ...failed.map((r) =>
      [
        '',
        `$ ${r.command}`,
        r.timedOut ? `(timed out after ${Math.round(r.durationMs / 1000)}s)` : `(exit code ${r.exitCode ?? 'none: it could not start'})`,
        r.output.trimEnd(),
      ].join('\n'),
    ),
  ].join('\n');
}
