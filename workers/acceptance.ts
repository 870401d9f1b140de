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
import { spawn } from 'node:child_process';
import { signalGroup } from './proc/kill.js';
import type { CommandResult } from './proc/shell-command.js';
import type { AgentSandbox } from './agents/agent-adapter.js';
import { confineCommand } from './sandbox/sandbox.js';

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
}

export interface AcceptanceOutcome {
  /** True when every command exited 0 within its time. */
  green: boolean;
  results: CommandResult[];
}

/** Run one command; never throws (a spawn failure is a result with exitCode null). */
export function runCheck(command: string, options: Omit<AcceptanceOptions, 'commands'>): Promise<CommandResult> {
  const keep = options.keepBytes ?? 16 * 1024;
  const started = Date.now();
  return new Promise((resolve) => {
    let output = '';
    const append = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.length > keep * 2) output = output.slice(-keep);
    };
    const env = { ...(options.env ?? process.env), CI: 'true' } as Record<string, string>;
    const confined = options.sandbox ? confineCommand(options.sandbox.bwrap, options.sandbox.spec, '/bin/sh', ['-c', command], env) : null;
    const child = spawn(confined?.command ?? '/bin/sh', confined?.args ?? ['-c', command], {
      cwd: options.cwd,
      env: confined?.env ?? env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let timedOut = false;
    const killGroup = () => signalGroup(child.pid, 'SIGKILL');
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutSeconds * 1000);
    const onAbort = () => killGroup();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    const finish = (exitCode: number | null, extra = '') => {
      clearTimeout(timer);
      confined?.dispose();
      options.signal?.removeEventListener('abort', onAbort);
      const tail = (output + extra).slice(-keep);
      resolve({ command, exitCode, timedOut, durationMs: Date.now() - started, output: tail });
    };
    child.on('error', (error) => finish(null, `\n[polly] could not start the check: ${error.message}\n`));
    child.on('close', (code) => {
      killGroup(); // reap anything the command left in its group (a dev server, a watcher)
      finish(timedOut ? null : code, timedOut ? `\n[polly] timed out after ${options.timeoutSeconds}s\n` : '');
    });
  });
}

/**
 * Run the acceptance commands in order.
 * @returns green iff every command exited 0; results for each command run.
 */
export async function runAcceptance(options: AcceptanceOptions): Promise<AcceptanceOutcome> {
  const results: CommandResult[] = [];
  for (const command of options.commands) {
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
