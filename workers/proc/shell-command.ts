/**
 * Shell commands Polly runs for a repository (acceptance checks, the worktree setup command) and
 * their one result shape. A red command is data, not an error: the result says how it ended, as
 * execa's result with `reject: false` does (https://github.com/sindresorhus/execa/blob/main/docs/api.md#result).
 *
 * {@link runShellCommand} is the one runner both use: `/bin/sh -c COMMAND` in its own process group
 * (so a timeout kills the whole tree, not just the shell), stdin closed, stdout and stderr
 * interleaved. `wrap` is where a confinement goes (e.g. a bubblewrap sandbox: it turns
 * `sh -c COMMAND` into the sandbox's argv and env), so every command Polly runs can be confined in
 * one place.
 */
import { spawn } from 'node:child_process';
import type { AgentSandbox } from '../agents/agent-adapter.js';
import { confineCommand } from '../sandbox/sandbox.js';
import { signalGroup } from './kill.js';
import type { BoundHit } from '../sandbox/resource-bounds.js';

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
  /** The sandbox's resource bounds it hit (workers/sandbox/resource-bounds.ts); absent or empty: none. */
  bounds?: BoundHit[];
}

/** A program and its environment, possibly rewritten by a {@link ShellCommandOptions.wrap}. */
export interface SpawnSpec {
  program: string;
  args: string[];
  env: Record<string, string>;
  /** Called once the process has ended (e.g. to remove the sandbox's temp files). */
  dispose?: () => void;
  /** After it ended, before `dispose`: the resource bounds it hit (a sandbox's). */
  boundHits?: (exit: { exitCode: number | null; signal?: string | null }, output: string) => BoundHit[];
}

/** A {@link ShellCommandOptions.wrap} for Polly's bubblewrap sandbox (workers/sandbox/sandbox.ts confineCommand). */
export function confinedSpawn(box: AgentSandbox, spec: SpawnSpec): SpawnSpec {
  const c = confineCommand(box.bwrap, box.spec, spec.program, spec.args, spec.env);
  return { program: c.command, args: c.args, env: c.env, dispose: () => c.dispose(), boundHits: (exit, output) => c.boundHits(exit, output) };
}

export interface ShellCommandOptions {
  cwd: string;
  /** The whole environment of the command (nothing is inherited beyond it). */
  env: Record<string, string>;
  /** Kill the process group after this many ms. */
  timeoutMs: number;
  /** Bytes of output kept in `output` (the tail). */
  keepBytes: number;
  /** Every output chunk, in order (e.g. to keep the whole output in a log file). */
  onOutput?: (chunk: Buffer) => void;
  /** Rewrite `sh -c COMMAND` before it is spawned (a sandbox). Default: run it as is. */
  wrap?: (spec: SpawnSpec) => SpawnSpec;
  /** Kill what the command left running in its process group when it exits (default true). */
  reapOnExit?: boolean;
  /** Text appended to `output` when it times out, given the timeout in ms. */
  timeoutNote?: (timeoutMs: number) => string;
  /** Text appended to `output` when it cannot start, given the error. */
  spawnErrorNote?: (error: Error) => string;
  signal?: AbortSignal;
}

/** Run `command` with `/bin/sh -c`; never throws (a spawn failure is a result with exitCode null). */
export function runShellCommand(command: string, options: ShellCommandOptions): Promise<CommandResult> {
  const keep = options.keepBytes;
  const started = Date.now();
  const base: SpawnSpec = { program: '/bin/sh', args: ['-c', command], env: options.env };
  const spec = options.wrap ? options.wrap(base) : base;
  return new Promise((resolve) => {
    let output = '';
    const append = (chunk: Buffer) => {
      options.onOutput?.(chunk);
      output += chunk.toString('utf8');
      if (output.length > keep * 2) output = output.slice(-keep);
    };
    const child = spawn(spec.program, spec.args, { cwd: options.cwd, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let timedOut = false;
    let done = false;
    const killGroup = () => signalGroup(child.pid, 'SIGKILL');
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = () => killGroup();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    const finish = (exitCode: number | null, extra = '', signal: string | null = null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const bounds = spec.boundHits?.({ exitCode, signal }, output) ?? [];
      spec.dispose?.();
      options.signal?.removeEventListener('abort', onAbort);
      const note = bounds.map((b) => `\n[polly] ${b.message}\n`).join('');
      const tail = (output + extra + note).slice(-keep);
      resolve({ command, exitCode, timedOut, durationMs: Date.now() - started, output: tail, ...(bounds.length > 0 ? { bounds } : {}) });
    };
    child.on('error', (error) => finish(null, options.spawnErrorNote?.(error) ?? ''));
    child.on('close', (code, sig) => {
      if (options.reapOnExit !== false) killGroup(); // reap anything the command left in its group (a dev server, a watcher)
      finish(timedOut ? null : code, timedOut ? (options.timeoutNote?.(options.timeoutMs) ?? '') : '', sig);
    });
  });
}
