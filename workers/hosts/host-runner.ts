/**
 * The worker runner of a host turn, booted before the turn's request arrives: `polly host turn`
 * (brain/commands/host.ts) starts it the moment its own process is up, so the runner's Node start
 * and its sandbox probes (bubblewrap, bounds, seccomp: workers/sandbox/sandbox.ts `warmSandbox`)
 * overlap the dispatcher pushing the state and the host preparing the worktree, instead of
 * following them. It is the same runner in the same standby mode as this machine's supervisor
 * keeps (workers/supervisor/worker-runner.ts `--standby`): it waits on a stdin pipe for one claim
 * line `{"specPath","env"}`, sets `env` in its own environment (never on disk) and runs that turn;
 * its stdin ending without a claim (the turn did not start, or `polly host turn` died: the kernel
 * closes the pipe) ends it at once, so nothing idles on the host. This module loads little
 * (no git, no sandbox), so the runner starts before `polly host turn` loads the rest.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { workerRunnerPath } from '../../brain/core/install-paths.js';

/** Polly's directory on this host, absolute (`dir` relative to HOME when not absolute). */
export function hostDir(dir: string, env: NodeJS.ProcessEnv = process.env): string {
  return isAbsolute(dir) ? dir : join(env.HOME || homedir(), dir);
}

/** A runner in standby on this host, for the turn about to come. */
export interface HostStandbyRunner {
  /** The runner's pid. */
  pid: number;
  /**
   * Hand it the turn: its spec file and the turn's environment (model keys: into the runner's
   * environment only). Its output file becomes `logPath` (renamed: the runner keeps writing it).
   * @returns the runner, or null when it is gone (the caller starts one cold).
   */
  claim(specPath: string, logPath: string, env: Record<string, string>): ChildProcess | null;
  /** End it when no turn claimed it (closes its stdin: it exits at once, removing its log). Idempotent. */
  discard(): void;
}

/**
 * Start a standby runner for a turn under Polly's directory `root` on this host (its `state/` is
 * the runner's `XDG_STATE_HOME`, as for a runner started cold; its output goes to
 * `state/standby/<pid>.log` until a turn claims it). Best effort: null when it cannot start.
 * @param env  the host's environment (the turn's own variables come with the claim).
 */
export function startHostStandby(root: string, env: NodeJS.ProcessEnv): HostStandbyRunner | null {
  const state = join(root, 'state');
  const logs = join(state, 'standby');
  let child: ChildProcess;
  let logPath: string;
  try {
    mkdirSync(logs, { recursive: true, mode: 0o700 });
    logPath = join(logs, `${process.pid}-${Date.now()}.log`);
    const log = openSync(logPath, 'a', 0o600);
    try {
      child = spawn(process.execPath, [workerRunnerPath(), '--standby', `polly-host-standby-${process.pid}`], {
        cwd: state,
        env: { ...env, XDG_STATE_HOME: state },
        detached: true,
        stdio: ['pipe', log, log],
      });
    } finally {
      closeSync(log);
    }
  } catch {
    return null;
  }
  child.on('error', () => undefined);
  child.stdin?.on('error', () => undefined);
  if (!child.pid) return null;
  let used = false;
  return {
    pid: child.pid,
    claim(specPath, target, turnEnv) {
      if (used) return null;
      used = true;
      if (child.exitCode !== null || child.signalCode !== null || !child.stdin?.writable) return null;
      try {
        renameSync(logPath, target);
      } catch {
        // the runner's output stays in state/standby/; the turn's own log says nothing more
      }
      child.stdin.end(`${JSON.stringify({ specPath, env: turnEnv })}\n`);
      return child;
    },
    discard() {
      if (used) return;
      used = true;
      child.stdin?.end();
      rmSync(logPath, { force: true });
    },
  };
}
