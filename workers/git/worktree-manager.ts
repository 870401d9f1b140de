/**
 * The worktree manager: one worktree per task at `.worktrees/<id>` on branch `polly/<id>`.
 *
 * Guarantees (each "case N" is a test of that name in test/workers/git/orchestration-git.test.ts):
 * - created from the base's commit, never by checking out the base branch (case 4);
 * - stale `.git/worktrees/<name>` registrations are pruned, and a non-empty directory in the way is
 *   never deleted: the next free path `.worktrees/<id>-2`, `-3`, … is used and the choice recorded
 *   (case 2);
 * - a `polly/<id>` branch left by an earlier run that is not contained in the current base is kept
 *   under `refs/polly/backup/<id>/<timestamp>` and the new branch starts from the current base
 *   (case 3);
 * - ignored files listed in `.worktreeinclude` are copied and the setup command runs (case 10),
 *   submodules are initialised (case 12), a free `PORT` is allocated (case 9);
 * - teardown first saves modified, staged and untracked files and unpushed commits to a ref under
 *   `refs/polly/backup/` without touching the worktree (case 5);
 * - every git call is non-interactive (case 13, see ./git.ts);
 * - fresh base (issue 16): the base is the remote's branch just fetched (`git fetch <remote>
 *   <branch>`, then `<remote>/<branch>`), the remote's default branch when no base is named; the
 *   local branch only when there is no such remote or branch, or when it is strictly ahead of the
 *   remote's (the user's unpushed commits on top). A local branch behind, ahead of or diverged
 *   from the remote one is reported in {@link CreatedWorktree.freshness} and journaled. Creates
 *   that come while a fetch of the same branch is under way join it (`worktree.base_fetch_joined`).
 *
 * Git admin operations (worktree add/remove/prune, branch moves, submodule init) run under the
 * per-repository admin lock (./repo-lock.ts); the checkout of the files runs outside it, so
 * concurrent creates populate their worktrees in parallel.
 */
import { pathContractBreach, pathContractError, type PathContract } from './protected-paths.js';
import { appendFileSync, existsSync, realpathSync } from 'node:fs';
import { appendFile, mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { isPollyError, PollyError } from '../../brain/core/errors.js';
import { describeIdentity, resolveCommitIdentity } from './commit-identity.js';
import { snapshotWorktree, writeBackupRef, type BackupResult } from './worktree-backup.js';
import { isNpmInstallOnly, reuseNodeModules } from './dependency-reuse.js';
import { commandSandbox } from '../sandbox/command-sandbox.js';
import { removeGitReadView } from '../sandbox/git-read-view.js';
import { createGitRunner, firstLine, type GitCallOptions, type GitResult, type GitRunner } from './git.js';
import { createPortAllocator, type PortAllocator } from '../ports.js';
import { retryTransientGit } from './git-retry.js';
import { resolveWorktreesDir, worktreesDirProblem } from './worktrees-dir.js';
import { createRepoLock, type RepoLock } from './repo-lock.js';
import { beginPollyRefWrite, createRefGuard, describeChanges, diffSnapshots, recordPollyRefWrite, sandboxCouldWrite } from './ref-guard.js';
import { appliedMounts } from '../sandbox/sandbox-spec.js';
import { copyWorktreeIncludes } from './worktree-include.js';
import { setupInputs, type SetupInputs } from './setup-inputs.js';
import { stageWorktree } from './nested-repos.js';
import { readArtifacts, recordArtifacts, untrackedPaths } from './polly-artifacts.js';
import { parseWorktreeListPorcelainZ, type WorktreeEntry } from './worktree-porcelain.js';
import { confinedSpawn, runShellCommand, type CommandResult, type SpawnSpec } from '../proc/shell-command.js';
import { cappedLog } from '../proc/capped-log.js';
import { pidAlive } from '../proc/process-liveness.js';
import type { ResourceLimits } from '../sandbox/resource-bounds.js';

/** Journal sink: `kind` is dotted (`worktree.created`, …); `data` never holds secrets. */
export type WorktreeJournal = (kind: string, data: Record<string, unknown>) => void;

export interface WorktreeManagerOptions {
  /** The repository's main checkout (absolute). */
  repoRoot: string;
  /** Where worktrees go, relative to `repoRoot` or absolute. Default `.worktrees`. */
  worktreesDir?: string;
  /** Shell command run in each new worktree after includes are copied (e.g. `npm ci`); null: none. */
  setupCommand?: string | null;
  /**
   * Before the setup command, copy the main checkout's node_modules when package-lock.json is
   * identical (dependency-reuse.ts); an install-only setup (`npm ci`, `npm install`) is then
   * skipped. Default true; false always runs the setup command (the benchmark's baseline).
   */
  reuseDependencies?: boolean;
  /** Timeout of the setup command, ms. Default 900 000 (15 min). */
  setupTimeoutMs?: number;
  /**
   * The user's environment whose GIT_AUTHOR_* / GIT_COMMITTER_* commits honour (see
   * commit-identity.ts; every other GIT_* is dropped). Default `process.env`.
   */
  identityEnv?: NodeJS.ProcessEnv;
  /**
   * The setup command runs in Polly's OS sandbox (workers/sandbox/command-sandbox.ts):
   * `network` is `worktrees.setup_network`, `allowUnconfined` is `workers.allow_unconfined`
   * (fail closed: without it, a machine without the sandbox gets a red setup naming the fix).
   * Default `{network: false, allowUnconfined: false}`.
   */
  setupSandbox?: { network: boolean; allowUnconfined: boolean; passthrough?: string[]; limits?: ResourceLimits; toolPaths?: string[] };
  /** Where setup output is kept. Default `<repoRoot>/.polly/logs`. */
  logsDir?: string;
  /**
   * Told when the setup command of task `id` starts (its output is appended to `logPath` as it
   * comes) and when it ends, e.g. to show its progress (brain/registry/task-progress.ts).
   */
  onSetup?: (event: { id: string; command: string; logPath: string; state: 'started' | 'ended' }) => void;
  journal?: WorktreeJournal;
  clock?: { now(): Date };
  /** Git runner; default {@link createGitRunner}(). */
  git?: GitRunner;
  /** Port allocator; default {@link createPortAllocator}(). */
  ports?: PortAllocator;
  /** Wait for another process's admin lock at most this long, ms. Default 60 000. */
  lockTimeoutMs?: number;
  /**
   * The remote whose branch is fetched and used as the base (default `origin`); null: always the
   * local branch (the behaviour before issue 16).
   */
  remote?: string | null;
}

/**
 * Where the base commit came from, and how the local branch of the same name compares with it.
 * `local` compares `refs/heads/<branch>` with the base commit: `same`, `behind` (the remote has
 * commits the local branch lacks: a human merged, nobody pulled), `ahead` (unpushed local commits,
 * the base is then the local branch), `diverged` (the base is the remote's), or `absent`. `warning` is a sentence for the user, null when fine.
 */
export interface BaseFreshness {
  source: 'remote' | 'local';
  /** `refs/remotes/<remote>/<branch>` when the base came from the remote, else null. */
  remoteRef: string | null;
  local: 'same' | 'behind' | 'ahead' | 'diverged' | 'absent';
  /** Commits in the base that the local branch lacks. */
  behindBy: number;
  /** Commits in the local branch that the base lacks. */
  aheadBy: number;
  warning: string | null;
}

/** What `create()` recovered from before creating (all empty on a clean run). */
export interface CreateRecovery {
  /** Registered worktrees whose directory was gone, pruned with `git worktree prune`. */
  prunedEntries: string[];
  /** Non-empty directories found at the preferred path(s), left untouched. */
  pathsInTheWay: string[];
  /**
   * A worktree of this task whose `git worktree add` never finished (git's `locked initializing`
   * marker left by a crash): backed up (when its directory exists) and removed.
   */
  interrupted: null | { path: string; backupRef: string | null };
  /** A `polly/<id>` branch from an earlier run, and what was done with it. */
  staleBranch: null | {
    oldCommit: string;
    /** True when the old commit was already contained in the base (nothing to keep). */
    containedInBase: boolean;
    /** The backup ref keeping the old commits, or null when contained in the base. */
    backupRef: string | null;
  };
}

/** The outcome of the setup command (an expected outcome: a red setup is data, not an error). */
export interface SetupResult extends CommandResult {
  /** The whole combined output (`output` is its tail, ≤ 4000 characters). */
  logPath: string;
  /**
   * The ref guard's finding when the command changed a ref other than the task's own branch, a
   * path remote's ref or git metadata (`ref guard: during worktrees.setup: <ref> changed, <old> →
   * <new>; … (all put back)`), after putting it back; null when nothing changed. The task must
   * fail on it even when the command exited 0.
   */
  refGuard: string | null;
  /** The lockfiles it installed from, as they were when it started (./setup-inputs.ts). */
  inputs: SetupInputs;
}

export interface CreatedWorktree {
  id: string;
  /** Absolute path of the worktree. */
  path: string;
  /** `polly/<id>`. */
  branch: string;
  /** The base branch name, or null when only a commit was given. */
  baseBranch: string | null;
  /** The commit the branch starts from. */
  baseCommit: string;
  /** A free TCP port for this worker (PORT in its environment). */
  port: number;
  recovered: CreateRecovery;
  /** Repository-relative paths copied from `.worktreeinclude`. */
  included: string[];
  /** Paths of submodules initialised (from `.gitmodules`), empty when none. */
  submodules: string[];
  setup: SetupResult | null;
  /** The fresh-base report; null when an explicit `baseCommit` was given. */
  freshness: BaseFreshness | null;
}

export type { BackupResult } from './worktree-backup.js';

export interface RemoveResult extends BackupResult {
  /** The path removed (or found missing). */
  path: string | null;
  /**
   * What did not go the usual way, one line each (a submodule deinit or `git worktree remove`
   * that failed, and how the removal was finished instead); empty when git's way worked.
   */
  notes: string[];
}

export interface ManagedWorktree extends WorktreeEntry {
  /** The task id when the branch is `polly/<id>`, else null. */
  taskId: string | null;
}

export interface ReconcileReport {
  /** Known ids with a registered worktree whose directory exists. */
  live: Array<{ id: string; path: string }>;
  /** Known ids without a usable worktree; `reason` is a sentence for the task's statusReason. */
  missing: Array<{ id: string; path: string | null; cause: 'directory_missing' | 'not_registered'; reason: string }>;
  /** Registered `polly/<id>` worktrees whose id is not among the known ids. */
  orphans: Array<{ id: string; path: string }>;
  /** Directories under the worktrees dir that are not registered worktrees (left untouched). */
  unregisteredDirs: string[];
}

export interface WorktreeManager {
  /**
   * Create the worktree of task `id` on `polly/<id>` from the base's current commit.
   * @param baseBranch  branch to start from: `<remote>/<baseBranch>` freshly fetched, else the local
   *   branch (default: the remote's default branch, else the branch checked out in repoRoot)
   * @param baseCommit  explicit commit (wins over the branch's tip; the branch is then only recorded)
   * @throws PollyError `bad_input` (bad id, unknown base), `conflict` (the task already has a live
   *   worktree, or no free path), `git_failed`, `lock_timeout`.
   */
  create(input: { id: string; baseBranch?: string; baseCommit?: string }): Promise<CreatedWorktree>;
  /**
   * Save everything of the worktree to `refs/polly/backup/<id>/<timestamp>` without touching its
   * index or files (a temporary index via GIT_INDEX_FILE, `write-tree`, `commit-tree`).
   * @throws PollyError `not_found` when neither the worktree nor the branch exists.
   */
  backup(input: { id: string; reason: string }): Promise<BackupResult>;
  /**
   * Back up, then `git worktree remove --force` (prune when the directory is already gone). The
   * branch is kept. Idempotent: a task with no worktree left still gets its branch tip backed up.
   * Once the backup is made, removal always finishes: a submodule deinit or `worktree remove` that
   * fails (a worker left a `.gitmodules` git cannot parse, …) is passed over, Polly deletes the
   * directory itself (symlinks unlinked, never followed) and prunes the registration; `notes` and
   * the `worktree.removed` journal entry say so.
   * @throws PollyError `not_found` when neither the worktree nor the branch exists; `git_failed`
   *   when the backup cannot be made (then nothing is removed).
   */
  remove(input: { id: string; reason: string }): Promise<RemoveResult>;
  /**
   * Run the setup command again in the existing worktree of task `id` (a retry whose setup changed,
   * failed or whose lockfiles changed: ./setup-inputs.ts), as `create()` runs it. Null when there is
   * no setup command.
   * @throws PollyError `not_found` when the task has no worktree.
   */
  setup(input: { id: string }): Promise<SetupResult | null>;
  /** All worktrees of the repository (the main checkout first), from `git worktree list --porcelain -z`. */
  list(): Promise<ManagedWorktree[]>;
  /** Compare the registry's task ids with what is on disk; changes nothing. */
  reconcile(knownIds: readonly string[]): Promise<ReconcileReport>;
  /**
   * Commit everything the agent left in the worktree (`git add -A`; ignored files stay out) on its
   * current branch, with `--no-verify`. Nested git repositories stay out (gitlinks keep their
   * commit; a repository the agent made is journaled as `worktree.nested_repos_left_out` {id,
   * paths}): git would run git inside them with their own config (./nested-repos.ts). Author/committer: the user's GIT_AUTHOR_* / GIT_COMMITTER_*,
   * else git config (`author.*`, `committer.*`, `user.*`), else `Polly <polly@localhost>`
   * (commit-identity.ts); the journal entry `worktree.committed` names which. Call after the agent process has exited: a leftover `index.lock` is
   * then stale and is moved aside (renamed, not deleted) and journaled.
   * `contract`: the task's path contract (./protected-paths.ts): a staged change to a protected
   * path not declared, or outside the task's declared `paths`, commits nothing.
   * A merge in progress (MERGE_HEAD) is committed as a merge commit even when its tree is unchanged.
   * @returns the new commit, or null when there was nothing to commit.
   * @throws PollyError `protected_path` naming the paths (details `protected`, `outside`); `git_failed` from git.
   */
  commitAll(input: { id: string; message: string; contract?: PathContract }): Promise<string | null>;
}

interface RepoInfo {
  root: string;
  commonDir: string;
  worktreesDir: string;
  lock: RepoLock;
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/;

/** Create a worktree manager for one repository. Nothing runs until the first call. */
export function createWorktreeManager(options: WorktreeManagerOptions): WorktreeManager {
  const git = options.git ?? createGitRunner();
  const ports = options.ports ?? createPortAllocator();
  const clock = options.clock ?? { now: () => new Date() };
  const journal: WorktreeJournal = options.journal ?? (() => undefined);
  const remote = options.remote === undefined ? 'origin' : options.remote;
  const portsById = new Map<string, number>();
  const creating = new Set<string>();
  let infoPromise: Promise<RepoInfo> | null = null;
  let excludeChecked = false;

  function repo(): Promise<RepoInfo> {
    infoPromise ??= (async () => {
      if (!existsSync(options.repoRoot)) {
        throw new PollyError('not_a_git_repo', `repository root ${options.repoRoot} does not exist; pass the path of a git checkout`);
      }
      let out: Awaited<ReturnType<GitRunner['run']>>;
      try {
        out = await git.run(['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir'], { cwd: options.repoRoot });
      } catch (error) {
        throw new PollyError('not_a_git_repo', `${options.repoRoot} is not a git repository; run Polly inside a git checkout`, { cause: error });
      }
      const [top, common] = out.stdout.split('\n').map((s) => s.trim());
      const root = realpathSync(top ?? options.repoRoot);
      const commonDir = realpathSync(common ?? join(root, '.git'));
      const worktreesDir = resolveWorktreesDir(root, options.worktreesDir);
      const problem = worktreesDirProblem(root, worktreesDir);
      if (problem) {
        throw new PollyError(
          'config_invalid',
          `worktrees.dir ${options.worktreesDir} (${worktreesDir}) cannot hold worktrees: ${problem}. Set worktrees.dir in .polly/config.yaml to .worktrees or a directory beside the repository.`,
          {
            details: { dir: options.worktreesDir, path: worktreesDir },
          },
        );
      }
      return { root, commonDir, worktreesDir, lock: createRepoLock({ gitCommonDir: commonDir, timeoutMs: options.lockTimeoutMs }) };
    })();
    infoPromise.catch(() => {
      infoPromise = null;
    });
    return infoPromise;
  }

  /**
   * A git admin call (worktree add/list/prune/remove/unlock, submodule init): retried while it
   * fails because another git process was writing shared metadata (./git-retry.ts). Callers hold
   * the admin lock, so the other writer is a git Polly does not control (the user's, an IDE's).
   */
  /** Run git for cleanup: null when it succeeded, else the first line of why not (never throws; bounded at 120 s). */
  async function tryGit(args: string[], cwd: string): Promise<string | null> {
    try {
      const r = await admin(args, { cwd, okExitCodes: [1, 128, 255], timeoutMs: 120_000 });
      return r.exitCode === 0 ? null : `exit ${r.exitCode}: ${r.stderr.trim().split('\n')[0] ?? ''}`;
    } catch (error) {
      return (error as Error).message.split('\n')[0] ?? 'git failed';
    }
  }

  function admin(args: string[], call: GitCallOptions) {
    return retryTransientGit(() => git.run(args, call), {
      onRetry: (attempt, stderr) => journal('worktree.git_retry', { command: `git ${args.join(' ')}`, attempt, stderr }),
    });
  }

  /** `git worktree list`, parsed; the caller holds the admin lock (see {@link listLocked}). */
  async function listEntries(info: RepoInfo): Promise<ManagedWorktree[]> {
    const r = await admin(['worktree', 'list', '--porcelain', '-z'], { cwd: info.root });
    return parseWorktreeListPorcelainZ(r.stdout).map((e) => ({
      ...e,
      taskId: e.branch?.startsWith('refs/heads/polly/') ? e.branch.slice('refs/heads/polly/'.length) : null,
    }));
  }

  /**
   * `git worktree list` under the admin lock: listing reads every worktree's admin files, which a
   * concurrent `worktree add` is still writing (`failed to read .git/worktrees/<x>/locked`).
   */
  function listLocked(info: RepoInfo): Promise<ManagedWorktree[]> {
    return info.lock.withLock(() => listEntries(info));
  }

  async function revParse(cwd: string, rev: string): Promise<string | null> {
    const r = await git.run(['rev-parse', '--verify', '--quiet', '--end-of-options', rev], { cwd, okExitCodes: [1, 128] });
    return r.exitCode === 0 ? firstLine(r) : null;
  }

  async function isAncestor(cwd: string, a: string, b: string): Promise<boolean> {
    const r = await git.run(['merge-base', '--is-ancestor', a, b], { cwd, okExitCodes: [1] });
    return r.exitCode === 0;
  }

  function stamp(): string {
    return clock.now().toISOString().replace(/[-:]/g, '');
  }

  /** Create `refs/polly/backup/<id>/<timestamp>` → commit (worktree-backup.ts); the ref guard is told it is Polly's. */
  async function createBackupRef(info: RepoInfo, id: string, commit: string, reason: string): Promise<string> {
    // A ref lock held by another git is transient (retried); an existing ref takes the next name (worktree-backup.ts).
    const ref = await retryTransientGit(() => writeBackupRef(git, info.root, `refs/polly/backup/${id}/${stamp()}`, commit, reason));
    recordPollyRefWrite('local', ref, commit, options.repoRoot);
    return ref;
  }

  async function ensureWorktreesDirIgnored(info: RepoInfo): Promise<void> {
    if (excludeChecked) return;
    await mkdir(info.worktreesDir, { recursive: true });
    const rel = relative(info.root, info.worktreesDir);
    if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) {
      const r = await git.run(['check-ignore', '-q', `${rel}/`], { cwd: info.root, okExitCodes: [1] });
      if (r.exitCode === 1) {
        // Local to this clone (never a tracked file): keeps `git status` of the main checkout clean.
        const exclude = join(info.commonDir, 'info', 'exclude');
        await mkdir(join(info.commonDir, 'info'), { recursive: true });
        const current = existsSync(exclude) ? await readFile(exclude, 'utf8') : '';
        const sep = current === '' || current.endsWith('\n') ? '' : '\n';
        await appendFile(exclude, `${sep}# added by Polly: task worktrees\n/${rel.split('\\').join('/')}/\n`);
        journal('worktree.exclude_added', { file: exclude, pattern: `/${rel}/` });
      }
    }
    excludeChecked = true;
  }

  /**
   * Fetch the base from the remote (issue 16): `git fetch <remote> +refs/heads/<b>:refs/remotes/<remote>/<b>`
   * (only the remote-tracking ref moves). `branch` null: the remote's default branch
   * (`refs/remotes/<remote>/HEAD`, else `git ls-remote --symref <remote> HEAD`).
   * @returns the branch and its fetched commit; null when there is no such remote; `{failed}` (a
   *   sentence) when the fetch failed or the remote has no such branch (journaled
   *   `worktree.base_fetch_failed`; the local branch is used then, with that warning).
   */
  /** Base fetches under way, by remote and branch: concurrent creates share one (see fetchRemoteBase). */
  const baseFetches = new Map<string, Promise<GitResult>>();

  async function fetchRemoteBase(info: RepoInfo, branch: string | null): Promise<{ branch: string; commit: string; ref: string } | { failed: string } | null> {
    if (remote === null) return null;
    const url = await git.run(['remote', 'get-url', remote], { cwd: info.root, okExitCodes: [2, 128] });
    if (url.exitCode !== 0) return null;
    let name = branch;
    if (name === null) {
      const sym = await git.run(['symbolic-ref', '--quiet', `refs/remotes/${remote}/HEAD`], { cwd: info.root, okExitCodes: [1, 128] });
      name = sym.exitCode === 0 ? firstLine(sym).replace(`refs/remotes/${remote}/`, '') : null;
      if (name === null || name === '') {
        const ls = await git.run(['ls-remote', '--symref', remote, 'HEAD'], { cwd: info.root, okExitCodes: [1, 2, 128] });
        name = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(ls.stdout)?.[1] ?? null;
      }
      // The remote names no default branch: no origin/HEAD and its HEAD unborn (a `git init --bare`
      // whose HEAD names a branch nobody pushed, e.g. master beside a pushed main). The checkout's
      // branch then, as the local fallback would take: fetched when the remote has it, else the
      // fetch fails and the user is warned, never a silent start from the local branch.
      if (name === null) {
        const local = await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: info.root, okExitCodes: [1, 128] });
        name = local.exitCode === 0 ? firstLine(local) || null : null;
      }
      if (name === null) return null;
    }
    const ref = `refs/remotes/${remote}/${name}`;
    // Under the admin lock: two creates fetching the same ref at once would race on its lock file.
    // Creates that come while a fetch of the same branch is under way (8 dispatches at once) join it
    // rather than queue one fetch each behind the lock: their base is the remote as that fetch saw it.
    const key = `${remote}\0${name}`;
    let pending = baseFetches.get(key);
    if (pending === undefined) {
      pending = info.lock.withLock(() =>
        git.run(['fetch', '--quiet', '--no-tags', remote, `+refs/heads/${name}:${ref}`], { cwd: info.root, okExitCodes: [1, 128], timeoutMs: 120_000 }),
      );
      baseFetches.set(key, pending);
      const done = (): void => void baseFetches.delete(key);
      pending.then(done, done);
    } else journal('worktree.base_fetch_joined', { remote, branch: name });
    const fetched = await pending;
    if (fetched.exitCode !== 0) {
      const stderr = fetched.stderr.trim().slice(0, 500);
      journal('worktree.base_fetch_failed', { remote, branch: name, stderr });
      return {
        failed: `could not fetch ${name} from ${remote} (${stderr.split('\n').pop() || `exit ${fetched.exitCode}`}); the worktree starts from the local ${name}, which may be stale. Check "git fetch ${remote} ${name}".`,
      };
    }
    const commit = await revParse(info.root, `${ref}^{commit}`);
    return commit ? { branch: name, commit, ref } : null;
  }

  /** How `refs/heads/<branch>` compares with `commit` (see {@link BaseFreshness}). */
  async function compareLocal(info: RepoInfo, branch: string, commit: string, remoteRef: string | null): Promise<BaseFreshness> {
    const source = remoteRef === null ? 'local' : 'remote';
    const local = await revParse(info.root, `refs/heads/${branch}`);
    if (local === null) return { source, remoteRef, local: 'absent', behindBy: 0, aheadBy: 0, warning: null };
    if (local === commit) return { source, remoteRef, local: 'same', behindBy: 0, aheadBy: 0, warning: null };
    const counts = firstLine(await git.run(['rev-list', '--left-right', '--count', `${local}...${commit}`], { cwd: info.root }));
    const [aheadBy, behindBy] = counts.split(/\s+/).map(Number) as [number, number];
    const state = aheadBy === 0 ? 'behind' : behindBy === 0 ? 'ahead' : 'diverged';
    const from = remoteRef === null ? commit : remoteRef.replace(/^refs\/remotes\//, '');
    const warning =
      state === 'behind'
        ? `local ${branch} is ${behindBy} commit(s) behind ${from}; the worktree starts from ${from}. Run "git pull" in ${info.root} to update your checkout.`
        : state === 'ahead'
          ? `local ${branch} has ${aheadBy} commit(s) not on ${from}; the worktree starts from local ${branch}, so its PR will carry them too. Push them first to keep the PR to the task's own work.`
          : `local ${branch} and ${from} have diverged (${aheadBy} local, ${behindBy} remote commit(s)); the worktree starts from ${from}.`;
    return { source, remoteRef, local: state, behindBy, aheadBy, warning };
  }

  /**
   * The base's commit and the current tip of the task branch (null when absent): the freshly
   * fetched remote branch when there is one (see {@link fetchRemoteBase}), else the local branch.
   */
  async function resolveBase(
    info: RepoInfo,
    taskRef: string,
    baseBranch?: string,
    baseCommit?: string,
  ): Promise<{ branch: string | null; commit: string; taskTip: string | null; freshness: BaseFreshness | null }> {
    const taskTip = await revParse(info.root, taskRef);
    if (baseCommit !== undefined) {
      const commit = await revParse(info.root, `${baseCommit}^{commit}`);
      if (!commit) throw new PollyError('bad_input', `base commit "${baseCommit}" is not a commit in ${info.root}; pass an existing commit id`);
      return { branch: baseBranch ?? null, commit, taskTip, freshness: null };
    }
    const fetched = await fetchRemoteBase(info, baseBranch ?? null);
    const fetchWarning = fetched !== null && 'failed' in fetched ? fetched.failed : null;
    if (fetched !== null && !('failed' in fetched)) {
      const freshness = await compareLocal(info, fetched.branch, fetched.commit, fetched.ref);
      if (freshness.warning)
        journal('worktree.base_stale_local', {
          branch: fetched.branch,
          local: freshness.local,
          behindBy: freshness.behindBy,
          aheadBy: freshness.aheadBy,
          warning: freshness.warning,
        });
      // The newer of the two when one contains the other: a local branch strictly ahead holds the
      // user's unpushed commits on top of the remote's, and the task is meant to build on them.
      const commit = freshness.local === 'ahead' ? ((await revParse(info.root, `refs/heads/${fetched.branch}`)) as string) : fetched.commit;
      return { branch: fetched.branch, commit, taskTip, freshness };
    }
    let branch = baseBranch ?? null;
    if (branch === null) {
      const r = await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: info.root, okExitCodes: [1] });
      if (r.exitCode !== 0) {
        throw new PollyError('bad_input', `${info.root} has a detached HEAD, so there is no default base branch; pass baseBranch or baseCommit`);
      }
      branch = firstLine(r);
    }
    const commit = (await revParse(info.root, `refs/heads/${branch}^{commit}`)) ?? (await revParse(info.root, `${branch}^{commit}`));
    if (!commit)
      throw new PollyError('bad_input', `base branch "${branch}" does not exist in ${info.root}${remote ? ` nor on ${remote}` : ''}; pass an existing branch (e.g. main)`);
    return { branch, commit, taskTip, freshness: { source: 'local', remoteRef: null, local: 'same', behindBy: 0, aheadBy: 0, warning: fetchWarning } };
  }

  /**
   * Drop the worktree's lock: remove `<admin dir>/locked`, the admin dir named by the worktree's
   * `.git` file (`gitdir: <path>`, gitrepository-layout(5)) — what `git worktree unlock` does, without
   * a process; falls back to git when the file is not in that form.
   */
  async function unlockWorktree(info: RepoInfo, path: string): Promise<void> {
    const dotGit = await readFile(join(path, '.git'), 'utf8').catch(() => '');
    const m = /^gitdir: (.+)$/m.exec(dotGit);
    if (m?.[1]) {
      const admin = resolve(path, m[1].trim());
      if (existsSync(join(admin, 'gitdir'))) {
        await rm(join(admin, 'locked'), { force: true });
        return;
      }
    }
    await admin(['worktree', 'unlock', path], { cwd: info.root });
  }

  async function choosePath(info: RepoInfo, id: string, registered: Set<string>, recovered: CreateRecovery): Promise<string> {
    for (let n = 1; n <= 20; n++) {
      const path = join(info.worktreesDir, n === 1 ? id : `${id}-${n}`);
      if (!existsSync(path)) {
        if (!registered.has(path)) return path;
        continue;
      }
      const s = await stat(path);
      if (s.isDirectory() && (await readdir(path)).length === 0 && !registered.has(path)) return path;
      recovered.pathsInTheWay.push(path);
      journal('worktree.path_in_use', { id, path, action: 'left untouched; trying the next path' });
    }
    throw new PollyError(
      'conflict',
      `no free worktree path for task ${id}: ${recovered.pathsInTheWay.join(', ')} are in the way. ` +
        `Polly never deletes a directory it did not create; move or delete them, then dispatch again.`,
    );
  }

  /** The worktree of task `id`; `held`: the caller already holds the admin lock (it is not re-entrant). */
  async function findWorktree(info: RepoInfo, id: string, held = false): Promise<ManagedWorktree | null> {
    return (await (held ? listEntries(info) : listLocked(info))).find((e) => e.taskId === id) ?? null;
  }

  async function identityEnv(cwd: string): Promise<Record<string, string>> {
    return (await resolveCommitIdentity(git, cwd, options.identityEnv ?? process.env)).env;
  }

  async function runSetup(id: string, path: string, port: number, command: string, info: RepoInfo): Promise<SetupResult> {
    const logsDir = options.logsDir ?? join(info.root, '.polly', 'logs');
    await mkdir(logsDir, { recursive: true });
    const logPath = join(logsDir, `worktree-setup-${id}.log`);
    const inputs = setupInputs(path);
    // What setup adds (a virtualenv, node_modules copied in, a build) is Polly's, not the worker's: recorded, never committed.
    const untrackedBefore = await untrackedPaths(git, path);
    const keepArtifacts = async (): Promise<void> => {
      const added = await recordArtifacts(git, path, untrackedBefore);
      if (added.length > 0) journal('worktree.setup_artifacts', { id, count: added.length, paths: added.slice(0, 20) });
    };
    if (options.reuseDependencies !== false) {
      const reuse = await reuseNodeModules(info.root, path);
      journal('worktree.dependencies', { id, ...reuse });
      if (reuse.reused && isNpmInstallOnly(command)) {
        const note = `[polly] ${reuse.reason} in ${reuse.durationMs} ms; "${command}" skipped (it would install the same tree)`;
        await writeFile(logPath, `$ ${command}\n${note}\n[exit 0]\n`);
        await keepArtifacts();
        return { command, exitCode: 0, timedOut: false, durationMs: reuse.durationMs, output: note, logPath, refGuard: null, inputs };
      }
    }
    const started = Date.now();
    let confinement: Awaited<ReturnType<typeof commandSandbox>>;
    try {
      const box = options.setupSandbox ?? { network: false, allowUnconfined: false };
      confinement = await commandSandbox({
        repoRoot: info.root,
        worktree: path,
        worktreesDir: info.worktreesDir,
        network: box.network,
        allowUnconfined: box.allowUnconfined,
        ...(box.passthrough ? { passthrough: box.passthrough } : {}),
        ...(box.limits ? { limits: box.limits } : {}),
        ...(box.toolPaths ? { toolPaths: box.toolPaths } : {}),
        extraEnv: { PORT: String(port), POLLY_TASK_ID: id, POLLY_WORKTREE: path },
      });
    } catch (error) {
      if (!isPollyError(error)) throw error;
      await writeFile(logPath, `$ ${command}\n${error.message}\n`);
      journal('worktree.setup', { id, command, exitCode: null, timedOut: false, durationMs: Date.now() - started, logPath });
      return { command, exitCode: null, timedOut: false, durationMs: Date.now() - started, output: error.message, logPath, refGuard: null, inputs };
    }
    const box = confinement.sandbox;
    // The output goes to the log as it comes, so a long setup can be followed (polly ui, status --watch):
    // its first 16 MiB (../proc/capped-log.ts); the result keeps the last 4000 characters.
    await writeFile(logPath, `$ ${command}\n`);
    const log = cappedLog((data) => {
      try {
        appendFileSync(logPath, data);
      } catch {
        // the log is a view; the result keeps the output's tail
      }
    });
    let tail = Buffer.alloc(0);
    options.onSetup?.({ id, command, logPath, state: 'started' });
    // The ref guard around the command, as around every turn and acceptance run (./ref-guard.ts):
    // inside the sandbox the git metadata is read-only; where none runs, this is what holds.
    const guard = createRefGuard({ git, repoRoot: info.root });
    const before = await guard.snapshot();
    let r: Awaited<ReturnType<typeof runShellCommand>>;
    try {
      r = await runShellCommand(command, {
        cwd: path,
        env: confinement.env,
        timeoutMs: options.setupTimeoutMs ?? 900_000,
        keepBytes: 4000,
        onOutput: (chunk) => {
          // A tail of at most 32 KiB, enough for 4000 characters of UTF-8 (never the whole output in memory).
          tail = Buffer.concat([tail, chunk]);
          if (tail.length > 32_768) tail = tail.subarray(-16_384);
          log.write(chunk);
        },
        reapOnExit: false,
        ...(box ? { wrap: (spec: SpawnSpec) => confinedSpawn(box, spec) } : {}),
      });
    } finally {
      options.onSetup?.({ id, command, logPath, state: 'ended' });
    }
    const all = tail.toString('utf8').replace(/\r?\n$/, '');
    log.close();
    await appendFile(logPath, `${log.lastByte === 0x0a ? '' : '\n'}[exit ${r.exitCode ?? 'none'}${r.timedOut ? ', timed out' : ''}]\n`);
    let refGuard: string | null = null;
    const seen = diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: [`refs/heads/polly/${id}`] });
    // Confined: only what the sandbox could write is the command's; the rest was made outside it
    // meanwhile (a person's commit on their branch) and is left as is (brain/task-tools/ref-guard-step.ts).
    const mounts = box ? appliedMounts(box.spec, existsSync) : null;
    const changes = mounts ? seen.filter((c) => sandboxCouldWrite(mounts, before, c)) : seen;
    const outside = mounts ? seen.filter((c) => !sandboxCouldWrite(mounts, before, c)) : [];
    if (outside.length > 0) journal('worktree.setup_outside_change', { id, command, changes: outside });
    if (changes.length > 0) {
      const report = await guard.restore(before, changes);
      const undone = report.failed.length === 0 ? 'all put back' : `put back except: ${report.failed.map((f) => `${f.change.name} (${f.reason})`).join('; ')}`;
      refGuard = `ref guard: during worktrees.setup: ${describeChanges(changes)} (${undone}${report.quarantined.length > 0 ? '; overwritten values kept under refs/polly/quarantine/' : ''})`;
      journal('worktree.setup_ref_changed', {
        id,
        command,
        changes,
        restored: report.restored.length,
        failed: report.failed.map((f) => ({ name: f.change.name, reason: f.reason })),
        quarantined: report.quarantined,
      });
    }
    await keepArtifacts();
    const result: SetupResult = { ...r, output: all.length > 4000 ? all.slice(-4000) : all, logPath, refGuard, inputs };
    journal('worktree.setup', { id, command, exitCode: result.exitCode, timedOut: result.timedOut, durationMs: result.durationMs, logPath, refGuard });
    return result;
  }

  /** Back up task `input.id` (see the interface); `held`: the caller holds the admin lock. */
  async function backup(input: { id: string; reason: string }, held = false): Promise<BackupResult> {
    validateId(input.id);
    const info = await repo();
    const { id, reason } = input;
    const branchRef = `refs/heads/polly/${id}`;
    const tip = await revParse(info.root, branchRef);
    const entry = await findWorktree(info, id, held);
    if (!entry || entry.prunable !== null || !existsSync(entry.path)) {
      if (tip === null) throw new PollyError('not_found', `task ${id} has neither a worktree nor a branch polly/${id}; nothing to back up`);
      const ref = await createBackupRef(info, id, tip, reason);
      journal('worktree.backup', { id, reason, ref, commit: tip, files: false, note: 'worktree directory missing: only the branch commits could be kept' });
      return { ref, commit: tip, files: false };
    }
    const snapshot = await snapshotWorktree(git, { id, reason, cwd: entry.path, tip, when: clock.now().toISOString(), identityEnv });
    const ref = await createBackupRef(info, id, snapshot.commit, reason);
    journal('worktree.backup', { id, reason, ref, commit: snapshot.commit, files: true, head: snapshot.head });
    return { ref, commit: snapshot.commit, files: true };
  }

  /** The body of create(); `creating` guards against the same id twice at once in this process. */
  async function createWorktree(input: { id: string; baseBranch?: string; baseCommit?: string }): Promise<CreatedWorktree> {
    const { id } = input;
    const info = await repo();
    const branch = `polly/${id}`;
    const branchRef = `refs/heads/${branch}`;
    // Read before the admin lock: polly/<id> is only moved by create() of this id, which is
    // refused while another one runs; a branch made in between makes `-b` fail, never overwrites.
    const base = await resolveBase(info, branchRef, input.baseBranch, input.baseCommit);
    const recovered: CreateRecovery = { prunedEntries: [], pathsInTheWay: [], interrupted: null, staleBranch: null };
    const port = await ports.allocate(id);
    try {
      // Locked until fully set up: a crash before the unlock leaves a marker naming this process,
      // and the next create() recovers the worktree instead of tripping over it. A commit, not the
      // base branch: never a second checkout of a branch (case 4). No checkout here: the files are
      // written below, outside the admin lock.
      const addArgs = (mode: '-b' | '-B', path: string) => [
        'worktree',
        'add',
        '--no-checkout',
        '--lock',
        '--reason',
        `${CREATING_PREFIX}${process.pid}`,
        mode,
        branch,
        path,
        base.commit,
      ];
      const path = await info.lock.withLock(async () => {
        await ensureWorktreesDirIgnored(info);
        const preferred = join(info.worktreesDir, id);
        let old = base.taskTip;
        if (old === null && !existsSync(preferred)) {
          // Fresh task (the common case): add directly; any refusal from git (a stale registration
          // of the path, …) falls through to the careful path below.
          recordPollyRefWrite('local', branchRef, base.commit, options.repoRoot);
          const r = await admin(addArgs('-b', preferred), { cwd: info.root, okExitCodes: [128] });
          if (r.exitCode === 0) return preferred;
          journal('worktree.add_retry', { id, stderr: r.stderr.trim().slice(0, 500) });
          old = await revParse(info.root, branchRef);
        }
        let entries = await listEntries(info);
        const stale = entries.filter((e) => e.prunable !== null);
        if (stale.length > 0) {
          await admin(['worktree', 'prune'], { cwd: info.root });
          recovered.prunedEntries = stale.map((e) => e.path);
          journal('worktree.pruned', { id, entries: recovered.prunedEntries, why: 'registered worktree directories were missing' });
          entries = await listEntries(info);
        }
        let holder = entries.find((e) => e.branch === branchRef);
        if (holder && isInterruptedCreation(holder)) {
          // A creation that never finished (a crash): git's own `initializing` marker (no add is
          // in flight while we hold the admin lock) or Polly's, whose process is gone. Keep what
          // it has, then clear it.
          await admin(['worktree', 'unlock', holder.path], { cwd: info.root });
          const saved = existsSync(holder.path) ? await backup({ id, reason: 'interrupted worktree creation' }, true) : null;
          if (existsSync(holder.path)) await admin(['worktree', 'remove', '--force', '--force', holder.path], { cwd: info.root });
          else await admin(['worktree', 'prune'], { cwd: info.root });
          recovered.interrupted = { path: holder.path, backupRef: saved?.ref ?? null };
          journal('worktree.interrupted_recovered', { id, path: holder.path, backupRef: saved?.ref ?? null });
          entries = await listEntries(info);
          holder = entries.find((e) => e.branch === branchRef);
        }
        if (holder) {
          const creating = holder.locked?.startsWith(CREATING_PREFIX) ? ` (being created by pid ${holder.locked.slice(CREATING_PREFIX.length)})` : '';
          throw new PollyError(
            'conflict',
            `task ${id} already has a worktree at ${holder.path} on ${branch}${creating}; remove it first (remove() backs it up) or use another task id`,
            { details: { id, path: holder.path } },
          );
        }
        if (old !== null && old !== base.commit) {
          if (await isAncestor(info.root, old, base.commit)) {
            recovered.staleBranch = { oldCommit: old, containedInBase: true, backupRef: null };
            journal('worktree.branch_reset', { id, branch, oldCommit: old, baseCommit: base.commit, why: 'old branch contained in the base' });
          } else {
            const backupRef = await createBackupRef(info, id, old, `stale ${branch} from an earlier run`);
            recovered.staleBranch = { oldCommit: old, containedInBase: false, backupRef };
            journal('worktree.stale_branch_backed_up', {
              id,
              branch,
              oldCommit: old,
              backupRef,
              baseCommit: base.commit,
              why: 'the branch from an earlier run is not in the current base; the new branch starts from the current base',
            });
          }
        }
        const path = await choosePath(info, id, new Set(entries.map((e) => resolve(e.path))), recovered);
        recordPollyRefWrite('local', branchRef, base.commit, options.repoRoot);
        await admin(addArgs(old === null ? '-b' : '-B', path), { cwd: info.root });
        return path;
      });
      // The same step `git worktree add` runs for its checkout, on this worktree's own index.
      await git.run(['reset', '--hard', '--quiet', '--no-recurse-submodules'], { cwd: path });
      const rel = relative(info.root, info.worktreesDir);
      const includes = await copyWorktreeIncludes({ git, repoRoot: info.root, worktreePath: path, excludePrefixes: rel.startsWith('..') ? [] : [`${rel}/`] });
      if (includes.copied.length > 0) journal('worktree.include_copied', { id, files: includes.copied });
      let submodules: string[] = [];
      if (existsSync(join(path, '.gitmodules'))) {
        // `submodule update --init` writes the shared config: admin lock.
        await info.lock.withLock(() => admin(['submodule', 'update', '--init', '--recursive'], { cwd: path, timeoutMs: 600_000 }));
        const listed = await git.run(['submodule', 'status', '--recursive'], { cwd: path });
        submodules = listed.stdout
          .split('\n')
          .map((l) => l.trim().split(/\s+/)[1])
          .filter((p): p is string => !!p);
        journal('worktree.submodules', { id, submodules });
      }
      const setup = options.setupCommand ? await runSetup(id, path, port, options.setupCommand, info) : null;
      await unlockWorktree(info, path);
      portsById.set(id, port);
      const created: CreatedWorktree = {
        id,
        path,
        branch,
        baseBranch: base.branch,
        baseCommit: base.commit,
        port,
        recovered,
        included: includes.copied,
        submodules,
        setup,
        freshness: base.freshness,
      };
      journal('worktree.created', { id, path, branch, baseBranch: base.branch, baseCommit: base.commit, baseSource: base.freshness?.source ?? 'commit', port, recovered });
      return created;
    } catch (error) {
      ports.release(port);
      throw error;
    }
  }

  return {
    async create(input) {
      const { id } = input;
      validateId(id);
      if (creating.has(id)) throw new PollyError('conflict', `task ${id} is already being created by this Polly; wait for it to finish`);
      creating.add(id);
      try {
        return await createWorktree(input);
      } finally {
        creating.delete(id);
      }
    },

    backup: (input) => backup(input),

    async remove(input) {
      validateId(input.id);
      const info = await repo();
      const entry = await findWorktree(info, input.id);
      const saved = await backup(input);
      const notes: string[] = [];
      await info.lock.withLock(async () => {
        // The task's git read view (workers/sandbox/git-read-view.ts) goes with its worktree.
        if (entry && existsSync(entry.path)) removeGitReadView(info.root, entry.path);
        if (entry && existsSync(entry.path)) {
          // Everything below is the worker's to break (a `.gitmodules` git cannot parse, a
          // submodule or nested repository in the way); the backup is made, so removal always
          // finishes: git's way first, then Polly's own, and the notes say which.
          if (existsSync(join(entry.path, '.gitmodules'))) {
            // `worktree remove` refuses populated submodules; their commit is in the backup's gitlinks, their files, uncommitted work and own commits in its nested-repositories parent (worktree-backup.ts).
            const d = await tryGit(['submodule', 'deinit', '--all', '--force'], entry.path);
            if (d !== null) notes.push(`submodule deinit failed (${d}); the submodules were removed with the directory`);
          }
          const r = await tryGit(['worktree', 'remove', '--force', '--force', entry.path], info.root);
          if (r !== null || existsSync(entry.path)) {
            // fs.rm unlinks a symlink, never follows it: nothing outside the worktree is touched.
            await rm(entry.path, { recursive: true, force: true });
            // A locked registration is not pruned; the directory is gone, so the lock guards nothing.
            await tryGit(['worktree', 'unlock', entry.path], info.root);
            await admin(['worktree', 'prune'], { cwd: info.root });
            notes.push(`git worktree remove failed (${r ?? 'the directory was left'}); Polly deleted ${entry.path} itself and pruned its registration`);
          }
        } else if (entry) {
          await admin(['worktree', 'prune'], { cwd: info.root });
        }
      });
      const port = portsById.get(input.id);
      if (port !== undefined) ports.release(port);
      portsById.delete(input.id);
      const path = entry?.path ?? null;
      journal('worktree.removed', { id: input.id, reason: input.reason, path, backupRef: saved.ref, files: saved.files, notes });
      return { ...saved, path, notes };
    },

    async setup(input) {
      validateId(input.id);
      if (!options.setupCommand) return null;
      const info = await repo();
      const entry = await findWorktree(info, input.id);
      if (!entry || entry.prunable !== null || !existsSync(entry.path))
        throw new PollyError('not_found', `task ${input.id} has no worktree to run worktrees.setup in`, { details: { id: input.id } });
      let port = portsById.get(input.id);
      if (port === undefined) {
        port = await ports.allocate(input.id);
        portsById.set(input.id, port);
      }
      journal('worktree.setup_again', { id: input.id, path: entry.path, command: options.setupCommand });
      return runSetup(input.id, entry.path, port, options.setupCommand, info);
    },

    async list() {
      return listLocked(await repo());
    },

    async reconcile(knownIds) {
      const info = await repo();
      const entries = await listLocked(info);
      const known = new Set(knownIds);
      const report: ReconcileReport = { live: [], missing: [], orphans: [], unregisteredDirs: [] };
      const byId = new Map<string, ManagedWorktree>();
      for (const e of entries) if (e.taskId !== null) byId.set(e.taskId, e);
      for (const id of knownIds) {
        const e = byId.get(id);
        if (!e) {
          report.missing.push({ id, path: null, cause: 'not_registered', reason: `task ${id} has no registered worktree (polly/${id} is not checked out anywhere)` });
        } else if (!existsSync(e.path)) {
          report.missing.push({ id, path: e.path, cause: 'directory_missing', reason: `the worktree directory ${e.path} of task ${id} was deleted` });
        } else {
          report.live.push({ id, path: e.path });
        }
      }
      for (const [id, e] of byId) if (!known.has(id)) report.orphans.push({ id, path: e.path });
      if (existsSync(info.worktreesDir)) {
        const registered = new Set(entries.map((e) => resolve(e.path)));
        for (const name of (await readdir(info.worktreesDir)).sort()) {
          const p = join(info.worktreesDir, name);
          if (!registered.has(p) && (await stat(p)).isDirectory()) report.unregisteredDirs.push(p);
        }
      }
      return report;
    },

    async commitAll(input) {
      validateId(input.id);
      const info = await repo();
      const entry = await findWorktree(info, input.id);
      if (!entry || !existsSync(entry.path)) throw new PollyError('not_found', `task ${input.id} has no worktree on disk; nothing to commit`);
      const cwd = entry.path;
      const lockFile = firstLine(await git.run(['rev-parse', '--path-format=absolute', '--git-path', 'index.lock'], { cwd }));
      if (existsSync(lockFile)) {
        const aside = `${lockFile}.stale-${stamp()}`;
        await rename(lockFile, aside);
        journal('worktree.stale_index_lock', { id: input.id, lockFile, movedTo: aside });
      }
      // Never `git add --all` over a nested repository: git would run git inside it, with the
      // worker's config (./nested-repos.ts).
      // Nor over what Polly's own setup and checks made (./polly-artifacts.ts): a virtualenv, bytecode.
      const artifacts = await readArtifacts(git, cwd);
      const nested = await stageWorktree(git, cwd, {}, artifacts);
      if (nested.untracked.length > 0) journal('worktree.nested_repos_left_out', { id: input.id, paths: nested.untracked });
      if (artifacts.length > 0) journal('worktree.artifacts_left_out', { id: input.id, count: artifacts.length, paths: artifacts.slice(0, 20) });
      if (input.contract) {
        const breach = await pathContractBreach(git, cwd, input.contract);
        if (breach.protected.length > 0 || breach.outside.length > 0) {
          journal('worktree.path_contract_refused', { id: input.id, protected: breach.protected, outside: breach.outside });
          throw pathContractError(input.id, breach, input.contract.paths);
        }
      }
      const diff = await git.run(['diff', '--cached', '--quiet'], { cwd, okExitCodes: [1] });
      // A merge of the base in progress (integrate_base) is committed even when it changes no file:
      // the branch then contains the base, so the PR's diff is the task's own change (a stacked
      // task whose parent merged already holds the parent's content, yet not main's commit).
      const merging = (await git.run(['rev-parse', '-q', '--verify', 'MERGE_HEAD'], { cwd, okExitCodes: [1] })).exitCode === 0;
      if (diff.exitCode === 0 && !merging) return null;
      const identity = await resolveCommitIdentity(git, cwd, options.identityEnv ?? process.env);
      const branchRef = await git.run(['symbolic-ref', '-q', 'HEAD'], { cwd, okExitCodes: [1] });
      // Announced before the branch moves: a parallel task's ref guard must not see it as a worker's.
      const done = branchRef.exitCode === 0 ? beginPollyRefWrite('local', firstLine(branchRef), options.repoRoot) : () => {};
      let commit: string | undefined;
      try {
        await git.run(['commit', '--quiet', '--no-verify', '--no-edit', '-F', '-'], { cwd, env: identity.env, input: input.message });
        commit = (await revParse(cwd, 'HEAD')) as string;
      } finally {
        done(commit);
      }
      journal('worktree.committed', { id: input.id, commit, identity: describeIdentity(identity) });
      return commit;
    },
  };
}

/** Lock reason of a worktree while Polly sets it up; the pid follows. */
const CREATING_PREFIX = 'polly creating, pid ';

/**
 * True when `entry` is a creation that can no longer finish: git's `initializing` lock (an add that
 * died; git holds it only inside `worktree add`, which Polly runs under the admin lock), or Polly's
 * own marker whose process is gone. A marker of this process counts: a create of the same id in
 * this process is refused before it gets here (the manager's `creating` set).
 */
function isInterruptedCreation(entry: WorktreeEntry): boolean {
  if (entry.locked === 'initializing') return true;
  if (!entry.locked?.startsWith(CREATING_PREFIX)) return false;
  const pid = Number(entry.locked.slice(CREATING_PREFIX.length));
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  return !pidAlive(pid); // alive: another Polly process is setting it up
}

/** @throws PollyError `bad_input` unless `id` is a safe ref/path component. */
function validateId(id: string): void {
  if (!ID_PATTERN.test(id) || id.includes('..') || id.endsWith('.lock') || basename(id) !== id) {
    throw new PollyError(
      'bad_input',
      `task id "${id}" cannot name a branch and a directory; use 1-80 characters of letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  }
}
