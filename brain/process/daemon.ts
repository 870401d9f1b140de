/**
 * The Brain as a background process: `polly goal` and `polly run` start `polly brain` detached
 * when no live Brain owns the repository, with its output in `.polly/brain.log`. The command that
 * started it owns it: {@link stopStartedBrain} ends it when that command ends (brain/commands/follow-goal.ts).
 */
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { cliPath } from '../core/install-paths.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { PollyConfig } from '../config/config-schema.js';

/** The Brain a command found or started. */
export interface BrainStart {
  pid: number;
  /** True when this process spawned it (then this process owns it and must end it). */
  started: boolean;
  /** Resolves when the Brain this process spawned has exited (and been reaped); null when not ours. */
  exited: Promise<void> | null;
}

/**
 * Start `polly brain --exit-when-idle` detached (its own process group and session; its log in
 * `.polly/brain.log`) unless a live Brain owns the repository. Returns the Brain that runs. The
 * child is unref'd: it does not keep this process alive, but `exited` still resolves when it ends.
 */
export async function ensureBrain(store: RegistryStore, repoRoot: string, pollyDir: string, env: NodeJS.ProcessEnv, extraArgs: string[] = []): Promise<BrainStart> {
  const reg = await store.read();
  if (reg.brain && pidAlive(reg.brain.pid)) return { pid: reg.brain.pid, started: false, exited: null };
  const log = openSync(join(pollyDir, 'brain.log'), 'a');
  const child = spawn(process.execPath, [cliPath(), 'brain', '--exit-when-idle', ...extraArgs], {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: ['ignore', log, log],
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  child.unref();
  return { pid: child.pid ?? -1, started: true, exited };
}

/** Which Brain runs an approved plan: one that ran already, one started now, or none (nothing runs until `polly resume`). */
export type BrainAfterApproval = { state: 'running' | 'started'; pid: number } | { state: 'none' };

/**
 * After a plan was approved (`polly ui`, `polly plan approve`): the Brain that will run it. When none
 * runs and config `brain.start_on_approve` is true, one is started detached ({@link ensureBrain}, as
 * `polly resume --detach`), with `env` (the agents' keys come from it); the approving process does
 * not own it. Otherwise nothing is started and the caller says that nothing runs until `polly resume`.
 */
export async function brainAfterApproval(
  store: RegistryStore,
  config: Pick<PollyConfig, 'brain'>,
  repoRoot: string,
  pollyDir: string,
  env: NodeJS.ProcessEnv,
): Promise<BrainAfterApproval> {
  const reg = await store.read();
  if (reg.brain && pidAlive(reg.brain.pid)) return { state: 'running', pid: reg.brain.pid };
  if (!config.brain.start_on_approve) return { state: 'none' };
  const started = await ensureBrain(store, repoRoot, pollyDir, env);
  return { state: started.started ? 'started' : 'running', pid: started.pid };
}

/** How {@link stopStartedBrain} ended a Brain. */
export type BrainStop = 'not_ours' | 'exited' | 'stopped' | 'killed';

/**
 * True when `exited` resolves within `ms`. The timer is ref'd on purpose (the Brain's child handle is
 * unref'd, so it keeps this process alive until the Brain is down) and cleared once decided.
 */
async function exitsWithin(exited: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([exited.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * End a Brain this process started, so that nothing it started outlives the command (normal end,
 * error, SIGINT, SIGTERM, SIGHUP). A Brain found running (`started: false`) is left alone.
 * 1. Wait up to `idleMs` for it to exit by itself (`--exit-when-idle`: it leaves within one loop pass
 *    once nothing is open);
 * 2. SIGTERM: its graceful stop closes its LLM session (claude and its `polly mcp --brain`), and its
 *    standby runners end with it (their stdin pipe closes); wait up to `graceMs`;
 * 3. SIGKILL its process group.
 * Workers in a turn are detached runners and are not signalled: the next Brain adopts them (docs/guide.md,
 * "Stopping and resuming").
 * @param idleMs   ms; 0 when the command was interrupted (default 10,000).
 * @param graceMs  ms after SIGTERM before SIGKILL (default 15,000: the LLM session gets 5 s + 2 s).
 */
export async function stopStartedBrain(brain: BrainStart, options: { idleMs?: number; graceMs?: number } = {}): Promise<BrainStop> {
  if (!brain.started || !brain.exited || brain.pid <= 0) return 'not_ours';
  if (await exitsWithin(brain.exited, options.idleMs ?? 10_000)) return 'exited';
  try {
    process.kill(brain.pid, 'SIGTERM');
  } catch {
    return 'exited';
  }
  if (await exitsWithin(brain.exited, options.graceMs ?? 15_000)) return 'stopped';
  try {
    process.kill(-brain.pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
  await exitsWithin(brain.exited, 2000);
  return 'killed';
}
