/**
 * Snapshot backups of a task's worktree: everything in it (commits, staged state, tracked and
 * untracked files) saved as one commit under `refs/polly/backup/<id>/<timestamp>` without touching
 * the worktree's index or files. The worktree manager (worktree-manager.ts) decides when (before a
 * remove, a recovered creation, a stale branch) and journals it; this file makes the commit and the ref.
 *
 * The snapshot is stash-like (git-stash(1) "Discussion"): a temporary index (`GIT_INDEX_FILE`),
 * `write-tree` of the staged state and of the whole working tree, then `commit-tree`.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { firstLine, type GitRunner } from './git.js';
import { BACKUP_GIT_DIR_NAME, type NestedRepos, stageNestedRepoFiles, stageWorktree, stageWorktreeRaw } from './nested-repos.js';

export interface BackupResult {
  /** `refs/polly/backup/<id>/<timestamp>`. */
  ref: string;
  /** The backup commit the ref points to. */
  commit: string;
  /**
   * True when the worktree's files were saved: then `commit` is a stash-like commit whose tree is
   * the working tree (tracked + untracked, not ignored), first parent the worktree's HEAD (so
   * unpushed commits are reachable), second parent a commit of the index (staged state), a
   * next parent the `polly/<id>` tip when HEAD had moved off it, and a last parent, when the
   * worktree held nested repositories or submodules, a root commit of their files byte for byte,
   * each `.git` as `.git.polly-backup` (./nested-repos.ts stageNestedRepoFiles; named in the message). False when the directory was
   * gone: then `commit` is the branch tip.
   */
  files: boolean;
}

const EMPTY_OLD = '';

async function revParse(git: GitRunner, cwd: string, rev: string): Promise<string | null> {
  const r = await git.run(['rev-parse', '--verify', '--quiet', '--end-of-options', rev], { cwd, okExitCodes: [1, 128] });
  return r.exitCode === 0 ? firstLine(r) : null;
}

/**
 * Create `base` (or `base-2` … `base-20` when taken) → `commit` in the repository at `root`;
 * never overwrites an existing ref (`update-ref` with an empty old value).
 * @returns the ref created.
 * @throws PollyError `git_failed` when git refuses for another reason; `internal` when 20 names are taken.
 */
export async function writeBackupRef(git: GitRunner, root: string, base: string, commit: string, reason: string): Promise<string> {
  for (let n = 1; n <= 20; n++) {
    const ref = n === 1 ? base : `${base}-${n}`;
    const r = await git.run(['update-ref', '-m', `polly backup: ${reason}`, ref, commit, EMPTY_OLD], { cwd: root, okExitCodes: [1, 128] });
    if (r.exitCode === 0) return ref;
    if ((await revParse(git, root, ref)) === null) {
      throw new PollyError('git_failed', `cannot create backup ref ${ref} → ${commit}: ${r.stderr.trim()}`, {
        details: { command: r.command, cwd: r.cwd, exitCode: r.exitCode, stderr: r.stderr },
      });
    }
  }
  throw new PollyError('internal', `20 backup refs named ${base}… already exist; the clock given to the worktree manager is not moving`);
}

/**
 * Make the stash-like snapshot commit of the worktree at `cwd` (see {@link BackupResult.files}).
 * @param input.tip  the `polly/<id>` tip (a third parent when HEAD moved off it), or null.
 * @param input.when the time written into the messages (ISO 8601).
 * @param input.identityEnv  the commit identity variables for `commit-tree`.
 * @returns the snapshot commit and the worktree's HEAD.
 * @throws PollyError `git_failed` when the worktree has no HEAD commit or git fails.
 */
export async function snapshotWorktree(
  git: GitRunner,
  input: { id: string; reason: string; cwd: string; tip: string | null; when: string; identityEnv: (cwd: string) => Promise<Record<string, string>> },
): Promise<{ commit: string; head: string }> {
  const { id, reason, cwd, tip, when } = input;
  const head = await revParse(git, cwd, 'HEAD');
  if (head === null) throw new PollyError('git_failed', `worktree ${cwd} of task ${id} has no HEAD commit; cannot back it up`);
  const tmp = await mkdtemp(join(tmpdir(), 'polly-backup-'));
  try {
    const tmpIndex = join(tmp, 'index');
    const env = { GIT_INDEX_FILE: tmpIndex };
    const realIndex = firstLine(await git.run(['rev-parse', '--path-format=absolute', '--git-path', 'index'], { cwd }));
    if (existsSync(realIndex)) await copyFile(realIndex, tmpIndex);
    else await git.run(['read-tree', 'HEAD'], { cwd, env });
    // The staged state; an index with conflicts cannot be written as a tree: use HEAD's then.
    const staged = await git.run(['write-tree'], { cwd, env, okExitCodes: [128] });
    const indexTree = staged.exitCode === 0 ? firstLine(staged) : ((await revParse(git, cwd, 'HEAD^{tree}')) as string);
    let nested: NestedRepos;
    try {
      nested = await stageWorktree(git, cwd, env);
    } catch {
      // `git add` applies the worktree's own .gitattributes, which a worker can make fail: the
      // backup then keeps the bytes as they are on disk (nested-repos.ts stageWorktreeRaw).
      nested = await stageWorktreeRaw(git, cwd, env);
    }
    const workTree = firstLine(await git.run(['write-tree'], { cwd, env }));
    const identity = await input.identityEnv(cwd);
    const indexCommit = firstLine(await git.run(['commit-tree', indexTree, '-p', head, '-m', `polly backup of the index of ${id} (${when})`], { cwd, env: identity }));
    const parents = ['-p', head, '-p', indexCommit];
    if (tip !== null && tip !== head) {
      const ancestor = await git.run(['merge-base', '--is-ancestor', tip, head], { cwd, okExitCodes: [1] });
      if (ancestor.exitCode !== 0) parents.push('-p', tip);
    }
    // Nested repositories and submodules, their uncommitted work and their own commits included,
    // byte for byte in a commit of their own (the last parent); git never runs inside them
    // (nested-repos.ts stageNestedRepoFiles). The worktree's tree keeps its gitlinks as they were.
    const nestedDirs = [...nested.gitlinks, ...nested.untracked];
    let nestedNote = '';
    if (nestedDirs.length > 0) {
      const nestedEnv = { GIT_INDEX_FILE: join(tmp, 'nested-index') };
      const adminDir = firstLine(await git.run(['rev-parse', '--absolute-git-dir'], { cwd }));
      const staged = await stageNestedRepoFiles(git, cwd, nestedEnv, nestedDirs, adminDir);
      if (staged.length > 0) {
        const nestedTree = firstLine(await git.run(['write-tree'], { cwd, env: nestedEnv }));
        const nestedCommit = firstLine(
          await git.run(['commit-tree', nestedTree, '-m', `polly backup of the nested repositories of ${id} (${when}): ${nestedDirs.join(', ')}`], { cwd, env: identity }),
        );
        parents.push('-p', nestedCommit);
        nestedNote = `nested repositories: ${nestedDirs.join(', ')} in ${nestedCommit} (the last parent): files as they were, each .git as ${BACKUP_GIT_DIR_NAME}; to restore one, git archive ${nestedCommit} <dir> | tar -x, then rename ${BACKUP_GIT_DIR_NAME} back to .git (for a submodule, also git config --file <dir>/.git/config --unset core.worktree)\n`;
      }
    }
    const message = `polly backup of ${id}: ${reason}\n\nworktree: ${cwd}\nhead: ${head}\nbranch tip: ${tip ?? '(none)'}\nat: ${when}\n${nestedNote}`;
    const commit = firstLine(await git.run(['commit-tree', workTree, ...parents, '-F', '-'], { cwd, env: identity, input: message }));
    return { commit, head };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
