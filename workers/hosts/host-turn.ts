/**
 * The host side of a remote turn (`polly host turn`, brain/commands/host.ts), started by the
 * dispatching machine over SSH (./remote-turn.ts is the other end).
 *
 * Layout under Polly's directory on the host (`dir`, absolute here). `<repo>` is the repository's
 * key (./worktree-transfer.ts `repoKeyFor`: one per origin), `<clone>` the dispatching clone's
 * (brain/core/polly-identity.ts: one per clone and machine), so two clones of one origin that
 * both have a task `p1` (two plans) share the mirror's objects and nothing of the task:
 * - `repos/<repo>/`: the repository's mirror, a git repository whose working tree is never checked
 *   out; the dispatching machines push state commits into it (`refs/polly/in/<clone>/<worker>`);
 *   it holds the objects every clone of the origin shares;
 * - `clones/<repo>/<clone>/`: the clone's own repository on the host, its objects borrowed from the
 *   mirror (`objects/info/alternates`), its refs its own: the task branches the worktrees are on,
 *   the task's base branch set to its base commit (the read view of the worker's sandbox takes the
 *   base from it, as on the dispatching machine), `refs/polly/out/<worker>` (the turn's result
 *   state) and `refs/polly/backup/<task>/<time>`;
 * - `worktrees/<repo>/<clone>/<task>/`: the task's worktree there, on `polly/<task>` of the clone's repository;
 * - `workers/<clone>/<worker>/`: the turn's runner files (spec, events, result, gate decisions, the goal's
 *   ledger as this turn charges it), as the
 *   supervisor keeps them on the dispatching machine (workers/supervisor/worker-runner.ts);
 * - `agents/<repo>/<clone>/<task>/<harness>/`: the agent's own state (its sessions, so a follow-up on the
 *   same host resumes them); `state/`: Polly's state root there (`XDG_STATE_HOME` of the runner);
 * - `slots/<n>`: the host's turn slots (`capacity` of them, one file each holding the pid of the
 *   turn that holds it; a dead pid's slot is free), so several dispatching Pollys never exceed it;
 *   `locks/<repo>-<clone>-<task>`: one turn per worktree at a time.
 *
 * The layout before clones were keyed (`worktrees/<repo>/<task>`, `agents/<repo>/<task>`,
 * `locks/<repo>-<task>`, worktrees of the mirror itself) is never used by a turn: a task that ran
 * there gets a new worktree from the state its dispatcher sends (which holds all of its work) and
 * a new agent session. {@link removeHostWorktree} removes such a directory (see there).
 *
 * Protocol (one JSON object per line): stdout first carries `{"t":"ready"}` once the host's Polly
 * is up, the mirror exists and a worker runner is booting (brain/commands/host.ts; the dispatcher
 * pushes the state meanwhile and sends the request after it). The request ({@link HostTurnRequest})
 * is the first line of stdin; after it stdin carries `{"t":"beat"}` (the dispatcher is alive) and
 * `{"t":"cancel"}`. stdout then carries `{"t":"started"}`, `{"t":"event","e"}` (each agent event, as the runner records
 * it), `{"t":"gate","line"}` (each gate decision), `{"t":"beat"}`, and last `{"t":"result",
 * "result","out"}` (the turn's result and the worktree's state commit, `refs/polly/out/<worker>` of
 * the clone's repository),
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
import { dirname, join } from 'node:path';
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
import { hostDir, type HostStandbyRunner } from './host-runner.js';

/** What the dispatching machine sends as the first line. */
export interface HostTurnRequest {
  /** The dispatcher's build (checked again here: the same Polly on both ends). */
  build: string;
  repoKey: string;
  /** The dispatching clone's key (brain/core/polly-identity.ts `pollyIdentity(repoRoot).id`, 16 hex digits). */
  clone: string;
  workerId: string;
  taskId: string;
  /** The task branch (`polly/<id>`). */
  branch: string;
  baseBranch: string | null;
  baseCommit: string | null;
  /** The dispatcher's worktree state commit, pushed to the mirror's `refs/polly/in/<clone>/<workerId>`. */
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
  | { t: 'ready' }
  | { t: 'started'; worktree: string }
  | { t: 'event'; e: AgentEvent }
  | { t: 'gate'; line: string }
  | { t: 'beat' }
  | { t: 'busy'; reason: string }
  | { t: 'refused'; message: string }
  | { t: 'result'; result: AgentRunResult; out: string | null }
  | { t: 'fenced'; reason: string };

export { hostDir };

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

/** Where one clone's task lives on the host (see the module doc): every path absolute. Pure. */
export interface HostTaskPaths {
  /** `repos/<repo>`: the mirror (shared objects). */
  mirror: string;
  /** `clones/<repo>/<clone>`: the clone's repository (its refs; objects borrowed from the mirror). */
  cloneRepo: string;
  /** `worktrees/<repo>/<clone>`: the clone's worktrees. */
  worktrees: string;
  /** `worktrees/<repo>/<clone>/<task>`. */
  worktree: string;
  /** `agents/<repo>/<clone>/<task>`: the task's agent state, one directory per harness under it. */
  agents: string;
  /** The name of the task's lock file in `locks/`. */
  lock: string;
}

/** The paths of task `taskId` of clone `clone` of repository `repoKey` under `root`. Pure. */
export function hostTaskPaths(root: string, repoKey: string, clone: string, taskId: string): HostTaskPaths {
  const worktrees = join(root, 'worktrees', repoKey, clone);
  return {
    mirror: join(root, 'repos', repoKey),
    cloneRepo: join(root, 'clones', repoKey, clone),
    worktrees,
    worktree: join(worktrees, taskId),
    agents: join(root, 'agents', repoKey, clone, taskId),
    lock: `${repoKey}-${clone}-${taskId}`,
  };
}

/**
 * The clone's repository at `cloneRepo` (created when missing: `git init`, never checked out), its
 * objects borrowed from `mirror` through `objects/info/alternates` (gitrepository-layout(7)): the
 * clone's task branches, base branches and result refs are its own, the objects are shared.
 * Idempotent. @returns `cloneRepo`.
 */
export async function ensureCloneRepo(git: GitRunner, cloneRepo: string, mirror: string): Promise<string> {
  if (!existsSync(join(cloneRepo, '.git', 'HEAD'))) {
    mkdirSync(cloneRepo, { recursive: true });
    await git.run(['init', '-q', cloneRepo], { cwd: cloneRepo });
    await git.run(['config', 'gc.auto', '0'], { cwd: cloneRepo });
    await git.run(['config', 'core.logAllRefUpdates', 'false'], { cwd: cloneRepo });
  }
  const alternates = join(cloneRepo, '.git', 'objects', 'info', 'alternates');
  const objects = `${join(mirror, '.git', 'objects')}\n`;
  if (!existsSync(alternates) || readFileSync(alternates, 'utf8') !== objects) {
    mkdirSync(dirname(alternates), { recursive: true });
    writeFileSync(alternates, objects);
  }
  return cloneRepo;
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
 * Make the task's worktree on the host hold `snapshot` exactly: HEAD on `branch` (of the clone's
 * repository) at the snapshot's parent, the files of the snapshot (tracked and untracked, as on the
 * dispatching machine), ignored files (a setup's node_modules) kept.
 * @param paths  the task's paths ({@link hostTaskPaths}); its clone's repository exists ({@link ensureCloneRepo}).
 * @returns the worktree path and whether it was created now.
 */
export async function prepareHostWorktree(
  git: GitRunner,
  paths: Pick<HostTaskPaths, 'cloneRepo' | 'worktrees' | 'worktree'>,
  request: Pick<HostTurnRequest, 'branch' | 'baseBranch' | 'baseCommit' | 'snapshot'>,
): Promise<{ worktree: string; created: boolean }> {
  const { cloneRepo, worktree } = paths;
  const parent = firstLine(await git.run(['rev-parse', '--verify', `${request.snapshot}^1`], { cwd: cloneRepo }));
  if (request.baseBranch && request.baseCommit && /^[\w./-]+$/.test(request.baseBranch) && !request.baseBranch.startsWith('polly/'))
    await git.run(['update-ref', `refs/heads/${request.baseBranch}`, request.baseCommit], { cwd: cloneRepo });
  let created = false;
  if (!existsSync(join(worktree, '.git'))) {
    mkdirSync(paths.worktrees, { recursive: true });
    await git.run(['worktree', 'prune'], { cwd: cloneRepo });
    await git.run(['worktree', 'add', '-q', '-f', '-B', request.branch, worktree, parent], { cwd: cloneRepo });
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
  options: { dir: string; env?: NodeJS.ProcessEnv; standby?: HostStandbyRunner | null } = { dir: '.polly-host' },
): Promise<number> {
  const env = options.env ?? process.env;
  const root = hostDir(options.dir, env);
  const git = createGitRunner();
  // A beat from the moment the request is read: preparing the worktree (a first `git worktree add`,
  // a loaded machine) must not look like a silent host to the dispatcher.
  write({ t: 'beat' });
  const beat = setInterval(() => write({ t: 'beat' }), Math.max(100, request.heartbeatMs));
  try {
    return await turnHere(request, rl, write, root, git, env, options.standby ?? null);
  } finally {
    clearInterval(beat);
  }
}

/** {@link runHostTurn} once its heartbeat runs. */
async function turnHere(
  request: HostTurnRequest,
  rl: Interface,
  write: (line: HostTurnLine) => void,
  root: string,
  git: GitRunner,
  env: NodeJS.ProcessEnv,
  standby: HostStandbyRunner | null,
): Promise<number> {
  // The keys name directories here: anything but 16 hex digits is a dispatcher of another build, or no Polly at all.
  for (const [name, value] of [
    ['repoKey', request.repoKey],
    ['clone', request.clone],
  ] as const) {
    if (typeof value !== 'string' || !/^[0-9a-f]{16}$/.test(value)) {
      write({
        t: 'refused',
        message: `the turn's request has ${name} ${JSON.stringify(value ?? null)}, not a key of 16 hex digits: the dispatching Polly is not this build (run "polly hosts install" for this host there)`,
      });
      return 2;
    }
  }
  const releaseSlot = takeSlot(join(root, 'slots'), Math.max(1, request.capacity));
  if (!releaseSlot) {
    write({ t: 'busy', reason: `all ${request.capacity} slots of this host are taken` });
    return 3;
  }
  const paths = hostTaskPaths(root, request.repoKey, request.clone, request.taskId);
  const releaseLock = takeSlot(join(root, 'locks'), 1, () => paths.lock);
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
    const repo = paths.cloneRepo;
    let worktree: string;
    try {
      await ensureCloneRepo(git, repo, await ensureMirror(git, root, request.repoKey));
      ({ worktree } = await prepareHostWorktree(git, paths, request));
    } catch (error) {
      write({ t: 'refused', message: `could not prepare the task's worktree on this host: ${(error as Error).message}` });
      return 2;
    }
    const dir = join(root, 'workers', request.clone, request.workerId);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    files = workerFiles(dir);
    const agentStateDir = join(paths.agents, request.spec.harness);
    // No state here yet (the task's first turn on this host for this clone, or its last ran under
    // the layout before clones were keyed): no session of it can be resumed here, so the turn
    // starts a new one in the same worktree state, as a turn placed on another host does.
    const resumeSessionId = existsSync(agentStateDir) ? request.spec.resumeSessionId : null;
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
      resumeSessionId,
      meter,
      cwd: worktree,
      gateContext: { ...request.spec.gateContext, repoRoot: repo, worktree, home },
      agentStateDir,
      gateDir: join(dir, 'gate'),
      journalPath: join(dir, 'gate-decisions.jsonl'),
      heartbeatMs: request.heartbeatMs,
      // The repository's worktrees, every clone's: the sandbox hides them all but the turn's own.
      config: { ...request.spec.config, worktrees: { ...(request.spec.config.worktrees ?? {}), dir: dirname(paths.worktrees) } },
    };
    writeJsonAtomic(files.spec, spec);
    // The dispatcher gave up while the worktree was prepared: no worker starts.
    if (inputEnded || Date.now() - lastHeard > request.leaseMs) {
      write({ t: 'fenced', reason: 'the dispatching Polly went away before the turn started' });
      return 4;
    }
    // The runner booted while the worktree was prepared (./host-runner.ts), else one started now.
    runner = standby?.claim(files.spec, files.log, request.env) ?? null;
    if (!runner) {
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
          await git.run(['update-ref', `refs/polly/out/${request.workerId}`, out], { cwd: repo });
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

/** What {@link removeHostWorktree} did. */
export interface HostWorktreeRemoval {
  /** The clone's worktree's backup ref (in the clone's repository), or null when the clone had no worktree of the task here. */
  backupRef: string | null;
  /** The backup ref (in the mirror) of the task's worktree of the layout before clones were keyed, or null when there was none or it was kept. */
  legacyBackupRef: string | null;
  /** Why that old worktree was kept (a turn runs in it), or null. */
  legacyKept: string | null;
}

/**
 * Remove task `taskId`'s worktree of clone `clone` on this host (`polly host remove`): its files
 * first kept as a state commit under `refs/polly/backup/<task>/<time>` in the clone's repository
 * (nothing a worker left is lost), then `git worktree remove --force`, then the task's agent state
 * of that clone. Another clone's worktree of a task with the same id is never touched. A task
 * without a worktree here is fine.
 *
 * The task's directories of the layout before clones were keyed (`worktrees/<repo>/<task>`,
 * `agents/<repo>/<task>`) go too, their files first kept under the same kind of ref in the mirror,
 * unless a turn still runs there (its old lock `locks/<repo>-<task>` held by a live process: then
 * they are kept and `legacyKept` says so). Which clone made such a directory cannot be told on the
 * host; no turn of any clone uses it again (each clone's turns now start from their own worktree
 * and the state their dispatcher sends), so removing it after its backup loses nothing.
 */
export async function removeHostWorktree(root: string, repoKey: string, clone: string, taskId: string): Promise<HostWorktreeRemoval> {
  const git = createGitRunner();
  const paths = hostTaskPaths(root, repoKey, clone, taskId);
  const backupRef = await removeWithBackup(git, paths.cloneRepo, paths.worktree, taskId);
  rmSync(paths.agents, { recursive: true, force: true });
  let legacyBackupRef: string | null = null;
  let legacyKept: string | null = null;
  const legacy = join(root, 'worktrees', repoKey, taskId);
  // A task id of 16 hex digits would name a clone's directory, not an old worktree.
  if (!/^[0-9a-f]{16}$/.test(taskId) && existsSync(join(legacy, '.git'))) {
    let holder = 0;
    try {
      holder = Number(readFileSync(join(root, 'locks', `${repoKey}-${taskId}`), 'utf8').trim());
    } catch {
      // no old turn holds it
    }
    if (holder > 0 && pidAlive(holder)) legacyKept = `a turn (pid ${holder}) still runs in ${legacy}`;
    else {
      legacyBackupRef = await removeWithBackup(git, paths.mirror, legacy, taskId);
      rmSync(join(root, 'agents', repoKey, taskId), { recursive: true, force: true });
    }
  }
  return { backupRef, legacyBackupRef, legacyKept };
}

/** Back up and remove `worktree` (a worktree of `repo`): @returns the backup ref, or null when there was no worktree. */
async function removeWithBackup(git: GitRunner, repo: string, worktree: string, taskId: string): Promise<string | null> {
  if (!existsSync(join(worktree, '.git'))) {
    if (existsSync(repo)) await git.run(['worktree', 'prune'], { cwd: repo, okExitCodes: [128] });
    return null;
  }
  const state = await worktreeStateCommit(git, worktree, `task ${taskId} before its removal from this host`);
  const ref = `refs/polly/backup/${taskId}/${new Date().toISOString().replace(/[:.]/g, '-')}`;
  await git.run(['update-ref', ref, state.commit], { cwd: repo });
  await git.run(['worktree', 'remove', '--force', '--force', worktree], { cwd: repo });
  return ref;
}
