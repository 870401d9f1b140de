/**
 * The host side of a remote turn (`polly host turn`, brain/commands/host.ts), started by the
 * dispatching machine over SSH (./remote-turn.ts is the other end).
 *
 * Layout under Polly's directory on the host (`dir`, absolute here):
 * - `repos/<key>/`: the repository's mirror, a git repository whose working tree is never checked
 *   out; the dispatching machines push state commits into it (`refs/polly/in/<worker>`), and the
 *   task's base branch is set to its base commit (the read view of the worker's sandbox takes the
 *   base from it, as on the dispatching machine);
 * - `worktrees/<key>/<task>/`: the task's worktree there, on `polly/<task>`;
 * - `workers/<worker>/`: the turn's runner files (spec, events, result, gate decisions, the goal's
 *   ledger as this turn charges it), as the
 *   supervisor keeps them on the dispatching machine (workers/supervisor/worker-runner.ts);
 * - `agents/<key>/<task>/<harness>/`: the agent's own state (its sessions, so a follow-up on the
 *   same host resumes them); `state/`: Polly's state root there (`XDG_STATE_HOME` of the runner);
 * - `slots/<n>`: the host's turn slots (`capacity` of them, one file each holding the pid of the
 *   turn that holds it; a dead pid's slot is free), so several dispatching Pollys never exceed it;
 *   `locks/<key>-<task>`: one turn per worktree at a time.
 *
 * Protocol (one JSON object per line): the request ({@link HostTurnRequest}) is the first line of
 * stdin; after it stdin carries `{"t":"beat"}` (the dispatcher is alive) and `{"t":"cancel"}`.
 * stdout carries `{"t":"started"}`, `{"t":"event","e"}` (each agent event, as the runner records
 * it), `{"t":"gate","line"}` (each gate decision), `{"t":"beat"}`, and last `{"t":"result",
 * "result","out"}` (the turn's result and the worktree's state commit, `refs/polly/out/<worker>`),
 * or `{"t":"busy"}` / `{"t":"refused","message"}` when the turn did not start.
 *
 * The lease: when stdin ends (the SSH channel closed) or no line came for `leaseMs`, the host stops
 * the worker at once (SIGTERM to the runner, which stops the agent's process group; SIGKILL to
 * both after 5 s) and exits: a host cut off from its dispatcher never goes on with a turn that
 * dispatcher is about to give to another host (it waits `leaseMs` before it does).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { Interface } from 'node:readline';
import { workerRunnerPath } from '../../brain/core/install-paths.js';
import type { AgentEvent, AgentRunResult } from '../agents/agent-adapter.js';
import { createGitRunner, firstLine, type GitRunner } from '../git/git.js';
import { killTree, signalPid } from '../proc/kill.js';
import { pidAlive } from '../proc/process-liveness.js';
import { createEventTail, readAgentPid } from '../supervisor/worker-files.js';
import type { WorkerSpec } from '../supervisor/worker-runner.js';
import { faultResult, readWorkerResult, workerFiles, writeJsonAtomic } from '../supervisor/worker-files.js';
import { worktreeStateCommit } from './worktree-transfer.js';
import { ensureGoalLedger } from '../metering/goal-ledger.js';

/** What the dispatching machine sends as the first line. */
export interface HostTurnRequest {
  /** The dispatcher's build (checked again here: the same Polly on both ends). */
  build: string;
  repoKey: string;
  workerId: string;
  taskId: string;
  /** The task branch (`polly/<id>`). */
  branch: string;
  baseBranch: string | null;
  baseCommit: string | null;
  /** The dispatcher's worktree state commit, pushed to `refs/polly/in/<workerId>`. */
  snapshot: string;
  /** The host's capacity as the dispatcher's config says. */
  capacity: number;
  leaseMs: number;
  heartbeatMs: number;
  /** The turn as the dispatcher's supervisor wrote it; its paths are replaced by the host's. */
  spec: WorkerSpec;
  /** The values of `spec.envKeys` and of the model variables (keys, rewritten base URLs): into the runner's environment only, never to disk. */
  env: Record<string, string>;
  /**
   * The goal's total on the dispatching machine when the turn was sent (its ledger is a file
   * there): the host's proxy charges a ledger of its own, seeded with it, and the dispatcher charges
   * its own from the streamed `metered` events. Null: the turn has no goal ledger.
   */
  goalCarried?: { tokens: number; usd: number } | null;
}

/** A line this side writes. */
export type HostTurnLine =
  | { t: 'started'; worktree: string }
  | { t: 'event'; e: AgentEvent }
  | { t: 'gate'; line: string }
  | { t: 'beat' }
  | { t: 'busy'; reason: string }
  | { t: 'refused'; message: string }
  | { t: 'result'; result: AgentRunResult; out: string | null }
  | { t: 'fenced'; reason: string };

/** Polly's directory on this host, absolute (`dir` relative to HOME when not absolute). */
export function hostDir(dir: string, env: NodeJS.ProcessEnv = process.env): string {
  return isAbsolute(dir) ? dir : join(env.HOME || homedir(), dir);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The mirror of `repoKey` under `root` (created when missing: `git init`, never checked out). Idempotent. */
export async function ensureMirror(git: GitRunner, root: string, repoKey: string): Promise<string> {
  const mirror = join(root, 'repos', repoKey);
  if (!existsSync(join(mirror, '.git', 'HEAD'))) {
    mkdirSync(mirror, { recursive: true });
    await git.run(['init', '-q', mirror], { cwd: mirror });
    // A transport repository: no automatic gc while turns read it, no reflogs to grow.
    await git.run(['config', 'gc.auto', '0'], { cwd: mirror });
    await git.run(['config', 'core.logAllRefUpdates', 'false'], { cwd: mirror });
  }
  return mirror;
}

/**
 * Take a free slot in `root/slots` (0 … capacity-1) for this process: a file created exclusively
 * holding this pid; a slot whose pid is dead is taken over. @returns the release function, or null when all are held.
 */
export function takeSlot(dir: string, capacity: number, names: (n: number) => string = (n) => `slot-${n}`): (() => void) | null {
  mkdirSync(dir, { recursive: true });
  for (let n = 0; n < capacity; n++) {
    const path = join(dir, names(n));
    for (let tries = 0; tries < 2; tries++) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        writeFileSync(fd, `${process.pid}\n`);
        closeSync(fd);
        return () => {
          try {
            if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path);
          } catch {
            // already gone
          }
        };
      } catch {
        let holder = 0;
        try {
          holder = Number(readFileSync(path, 'utf8').trim());
        } catch {
          continue; // removed meanwhile: try again
        }
        if (holder > 0 && pidAlive(holder)) break;
        try {
          unlinkSync(path); // a dead holder's slot
        } catch {
          // another taker removed it first
        }
      }
    }
  }
  return null;
}

/**
 * Make the task's worktree on the host hold `snapshot` exactly: HEAD on `branch` at the snapshot's
 * parent, the files of the snapshot (tracked and untracked, as on the dispatching machine),
 * ignored files (a setup's node_modules) kept.
 * @returns the worktree path and whether it was created now.
 */
export async function prepareHostWorktree(
  git: GitRunner,
  root: string,
  mirror: string,
  request: Pick<HostTurnRequest, 'repoKey' | 'taskId' | 'branch' | 'baseBranch' | 'baseCommit' | 'snapshot'>,
): Promise<{ worktree: string; created: boolean }> {
  const worktree = join(root, 'worktrees', request.repoKey, request.taskId);
  const parent = firstLine(await git.run(['rev-parse', '--verify', `${request.snapshot}^1`], { cwd: mirror }));
  if (request.baseBranch && request.baseCommit && /^[\w./-]+$/.test(request.baseBranch) && !request.baseBranch.startsWith('polly/'))
    await git.run(['update-ref', `refs/heads/${request.baseBranch}`, request.baseCommit], { cwd: mirror });
  let created = false;
  if (!existsSync(join(worktree, '.git'))) {
    mkdirSync(join(root, 'worktrees', request.repoKey), { recursive: true });
    await git.run(['worktree', 'prune'], { cwd: mirror });
    await git.run(['worktree', 'add', '-q', '-f', '-B', request.branch, worktree, parent], { cwd: mirror });
    created = true;
  } else {
    await git.run(['checkout', '-q', '-f', '-B', request.branch, parent], { cwd: worktree });
    await git.run(['clean', '-ffdq'], { cwd: worktree });
  }
  await git.run(['read-tree', '-u', '--reset', request.snapshot], { cwd: worktree });
  await git.run(['reset', '-q'], { cwd: worktree });
  return { worktree, created };
}

/**
 * Run one turn on this host (see the module doc). Resolves with the exit code: 0 after a result,
 * 2 refused, 3 busy, 4 fenced (the dispatcher went away).
 */
export async function runHostTurn(
  request: HostTurnRequest,
  rl: Interface,
  write: (line: HostTurnLine) => void,
  options: { dir: string; env?: NodeJS.ProcessEnv } = { dir: '.polly-host' },
): Promise<number> {
  const env = options.env ?? process.env;
  const root = hostDir(options.dir, env);
  const git = createGitRunner();
  // A beat from the moment the request is read: preparing the worktree (a first `git worktree add`,
  // a loaded machine) must not look like a silent host to the dispatcher.
  write({ t: 'beat' });
  const beat = setInterval(() => write({ t: 'beat' }), Math.max(100, request.heartbeatMs));
  try {
    return await turnHere(request, rl, write, root, git, env);
  } finally {
    clearInterval(beat);
  }
}

/** {@link runHostTurn} once its heartbeat runs. */
async function turnHere(request: HostTurnRequest, rl: Interface, write: (line: HostTurnLine) => void, root: string, git: GitRunner, env: NodeJS.ProcessEnv): Promise<number> {
  const releaseSlot = takeSlot(join(root, 'slots'), Math.max(1, request.capacity));
  if (!releaseSlot) {
    write({ t: 'busy', reason: `all ${request.capacity} slots of this host are taken` });
    return 3;
  }
  const releaseLock = takeSlot(join(root, 'locks'), 1, () => `${request.repoKey}-${request.taskId}`);
  if (!releaseLock) {
    releaseSlot();
    write({ t: 'busy', reason: `another turn of task ${request.taskId} runs in its worktree here` });
    return 3;
  }
  let runner: ChildProcess | null = null;
  let files: ReturnType<typeof workerFiles> | null = null;
  let fenced: string | null = null;
  let lastHeard = Date.now();
  let inputEnded = false;
  rl.on('line', (line) => {
    lastHeard = Date.now();
    try {
      const msg = JSON.parse(line) as { t?: string };
      if (msg.t === 'cancel' && runner?.pid) signalPid(runner.pid, 'SIGTERM');
    } catch {
      // a malformed line still counts as a sign of life
    }
  });
  rl.on('close', () => {
    inputEnded = true;
  });
  if ((rl as Interface & { closed?: boolean }).closed) inputEnded = true;
  rl.resume();
  const stopWorker = async (): Promise<void> => {
    if (!runner?.pid || !files) return;
    signalPid(runner.pid, 'SIGTERM');
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && runner.exitCode === null && runner.signalCode === null) await sleep(50);
    if (runner.exitCode === null && runner.signalCode === null) signalPid(runner.pid, 'SIGKILL');
    await killTree(readAgentPid(files), 0);
  };
  try {
    let mirror: string;
    let worktree: string;
    try {
      mirror = await ensureMirror(git, root, request.repoKey);
      ({ worktree } = await prepareHostWorktree(git, root, mirror, request));
    } catch (error) {
      write({ t: 'refused', message: `could not prepare the task's worktree on this host: ${(error as Error).message}` });
      return 2;
    }
    const dir = join(root, 'workers', request.workerId);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    files = workerFiles(dir);
    const agentStateDir = join(root, 'agents', request.repoKey, request.taskId, request.spec.harness);
    mkdirSync(agentStateDir, { recursive: true });
    const home = env.HOME || homedir();
    // The goal's ledger named in the spec is a path on the dispatching machine: this turn charges
    // one of its own here, seeded with the goal's total there (see HostTurnRequest.goalCarried).
    const goal = request.spec.meter?.goal ?? null;
    let meter = request.spec.meter;
    if (meter && goal) {
      const ledger = join(dir, 'goal-ledger.jsonl');
      ensureGoalLedger(ledger, request.goalCarried ?? { tokens: 0, usd: 0 });
      meter = { ...meter, goal: { ...goal, ledger } };
    }
    const spec: WorkerSpec = {
      ...request.spec,
      meter,
      cwd: worktree,
      gateContext: { ...request.spec.gateContext, repoRoot: mirror, worktree, home },
      agentStateDir,
      gateDir: join(dir, 'gate'),
      journalPath: join(dir, 'gate-decisions.jsonl'),
      heartbeatMs: request.heartbeatMs,
      config: { ...request.spec.config, worktrees: { ...(request.spec.config.worktrees ?? {}), dir: join(root, 'worktrees', request.repoKey) } },
    };
    writeJsonAtomic(files.spec, spec);
    // The dispatcher gave up while the worktree was prepared: no worker starts.
    if (inputEnded || Date.now() - lastHeard > request.leaseMs) {
      write({ t: 'fenced', reason: 'the dispatching Polly went away before the turn started' });
      return 4;
    }
    const log = openSync(files.log, 'a', 0o600);
    try {
      runner = spawn(process.execPath, [workerRunnerPath(), files.spec], {
        cwd: dir,
        env: { ...env, ...request.env, XDG_STATE_HOME: join(root, 'state') },
        detached: true,
        stdio: ['ignore', log, log],
      });
    } finally {
      closeSync(log);
    }
    runner.on('error', () => undefined);
    write({ t: 'started', worktree });
    const events = createEventTail(files.events);
    let gateOffset = 0;
    const drainGate = (): void => {
      try {
        const text = readFileSync(spec.journalPath!, 'utf8');
        const end = text.lastIndexOf('\n') + 1;
        if (end > gateOffset) {
          for (const line of text.slice(gateOffset, end).split('\n').filter(Boolean)) write({ t: 'gate', line });
          gateOffset = end;
        }
      } catch {
        // no decision yet
      }
    };
    const drain = (): void => {
      for (const e of events.read()) write({ t: 'event', e });
      drainGate();
    };
    for (;;) {
      drain();
      const result = readWorkerResult(files);
      if (result) {
        drain();
        let out: string | null = null;
        try {
          out = (await worktreeStateCommit(git, worktree, `task ${request.taskId} after ${request.workerId}`)).commit;
          await git.run(['update-ref', `refs/polly/out/${request.workerId}`, out], { cwd: mirror });
        } catch (error) {
          result.message = `${result.message ?? ''} (and its worktree's state could not be recorded on the host: ${(error as Error).message})`.trim();
          out = null;
        }
        write({ t: 'result', result, out });
        return 0;
      }
      if (runner.exitCode !== null || runner.signalCode !== null) {
        await sleep(100);
        if (readWorkerResult(files)) continue;
        drain();
        const tail = existsSync(files.log) ? readFileSync(files.log, 'utf8').slice(-2000) : '';
        write({
          t: 'result',
          result: faultResult('agent_exited', `the worker runner on this host exited (${runner.exitCode ?? runner.signalCode}) without a result`, Date.now(), [], tail),
          out: null,
        });
        return 0;
      }
      if (inputEnded) fenced = 'its SSH channel closed';
      else if (Date.now() - lastHeard > request.leaseMs) fenced = `no word from the dispatching Polly for ${Math.round(request.leaseMs / 1000)} s`;
      if (fenced) {
        await stopWorker();
        write({ t: 'fenced', reason: fenced });
        try {
          appendFileSync(files.log, `[polly host] turn stopped: ${fenced}\n`);
        } catch {
          // best effort
        }
        return 4;
      }
      await sleep(100);
    }
  } finally {
    rl.close();
    releaseLock();
    releaseSlot();
  }
}

/**
 * Remove the task's worktree on this host (`polly host remove`): its files first kept as a state
 * commit under `refs/polly/backup/<task>/<time>` in the mirror (nothing a worker left is lost),
 * then `git worktree remove --force`. A task without a worktree here is fine.
 * @returns the backup ref, or null when there was no worktree.
 */
export async function removeHostWorktree(root: string, repoKey: string, taskId: string): Promise<string | null> {
  const git = createGitRunner();
  const mirror = join(root, 'repos', repoKey);
  const worktree = join(root, 'worktrees', repoKey, taskId);
  if (!existsSync(join(worktree, '.git'))) {
    if (existsSync(mirror)) await git.run(['worktree', 'prune'], { cwd: mirror, okExitCodes: [128] });
    return null;
  }
  const state = await worktreeStateCommit(git, worktree, `task ${taskId} before its removal from this host`);
  const ref = `refs/polly/backup/${taskId}/${new Date().toISOString().replace(/[:.]/g, '-')}`;
  await git.run(['update-ref', ref, state.commit], { cwd: mirror });
  await git.run(['worktree', 'remove', '--force', '--force', worktree], { cwd: mirror });
  rmSync(join(root, 'agents', repoKey, taskId), { recursive: true, force: true });
  return ref;
}
