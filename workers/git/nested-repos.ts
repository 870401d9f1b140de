/**
 * Git repositories nested inside a worktree, and how Polly stages a worktree without ever running
 * git inside one of them.
 *
 * Why: a worker cannot write the repository's git config (workers/git/git-policy.ts), but it can
 * `git init` a repository of its own anywhere in its worktree, config included. Once such a
 * directory is in the index as a gitlink (mode 160000), git asks it whether it is dirty by running
 * `git status` inside it (git-diff-files(1), `--ignore-submodules`; diff-lib.c
 * `match_stat_with_submodule`), and that git reads the nested repository's own config: a
 * `filter.<driver>.clean` named by the nested `.gitattributes` then runs with Polly's rights and
 * environment, outside the sandbox (test/confinement/polly-git-attacks.test.ts). Polly's `-c` options
 * reach that child (GIT_CONFIG_PARAMETERS), but a driver name is the worker's to choose.
 *
 * Two halves close it:
 * - every Polly git call carries `-c diff.ignoreSubmodules=dirty` (./git.ts
 *   {@link import('./git.js').SAFE_GIT_CONFIG_ARGS}): `diff`, `status` and `commit` compare a
 *   gitlink's commit only and never look inside (git-config(1) `diff.ignoreSubmodules`);
 * - `git add` does not read that setting, so Polly's staging ({@link stageWorktree}) leaves out,
 *   by pathspec, every gitlink already in the index and every untracked nested repository
 *   (`git ls-files --others` lists one as `dir/`, gitignore(5) / git-ls-files(1)). A confined
 *   worker cannot move a real submodule's commit anyway (its git dir is read-only), so nothing a
 *   worker may do is lost; a repository it made stays in its worktree, uncommitted, and is named in
 *   the result.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { firstLine, type GitRunner } from './git.js';

/** The nested repositories of a worktree, repository-relative, without a trailing slash. */
export interface NestedRepos {
  /** Gitlinks in the index (submodules, or repositories committed earlier). */
  gitlinks: string[];
  /** Untracked directories that are git repositories (made by the worker). */
  untracked: string[];
}

/**
 * List the nested repositories of the worktree at `cwd` (see {@link NestedRepos}). Runs
 * `git ls-files --stage` and `git ls-files --others --exclude-standard`, neither of which enters a
 * nested repository. `env`: extra variables for git (e.g. `GIT_INDEX_FILE`).
 * @throws PollyError `git_failed` when git cannot list the index or the untracked files.
 */
export async function listNestedRepos(git: GitRunner, cwd: string, env: Record<string, string> = {}): Promise<NestedRepos> {
  const staged = await git.run(['ls-files', '--stage', '-z'], { cwd, env });
  const gitlinks: string[] = [];
  for (const rec of staged.stdout.split('\0')) {
    // `<mode> <object> <stage>\t<path>` (git-ls-files(1), "OUTPUT").
    const tab = rec.indexOf('\t');
    if (tab > 0 && rec.startsWith('160000 ')) gitlinks.push(rec.slice(tab + 1));
  }
  const others = await git.run(['ls-files', '--others', '--exclude-standard', '-z'], { cwd, env });
  const untracked = others.stdout
    .split('\0')
    .filter((p) => p.endsWith('/'))
    .map((p) => p.slice(0, -1));
  return { gitlinks: [...new Set(gitlinks)].sort(), untracked: untracked.sort() };
}

/**
 * Exclude pathspecs for `nested` (`:(exclude,top,literal)<path>`, gitglossary(7) "pathspec"): the
 * path is taken literally from the worktree's top, whatever characters it holds. Pure.
 */
export function nestedRepoExcludes(nested: NestedRepos): string[] {
  return [...nested.gitlinks, ...nested.untracked].map((p) => `:(exclude,top,literal)${p}`);
}

/**
 * `git add --all` of the whole worktree at `cwd` except its nested repositories (see the module
 * doc), so no git runs inside one of them, and except the untracked paths in `leaveOut`
 * (repository-relative files or directories: Polly's own artifacts, ./polly-artifacts.ts).
 * `env`: extra variables for git (e.g. `GIT_INDEX_FILE`).
 * @returns the nested repositories left out.
 * @throws PollyError `git_failed` when git fails.
 */
export async function stageWorktree(git: GitRunner, cwd: string, env: Record<string, string> = {}, leaveOut: readonly string[] = []): Promise<NestedRepos> {
  const nested = await listNestedRepos(git, cwd, env);
  // The pathspecs go on stdin, NUL-separated (git-add(1) --pathspec-from-file): a worker that made
  // thousands of nested repos would otherwise overflow the argument list (E2BIG) and block the commit.
  const pathspecs = [':/', ...nestedRepoExcludes(nested), ...leaveOut.map((p) => `:(exclude,top,literal)${p}`)];
  await git.run(['add', '--all', '--pathspec-from-file=-', '--pathspec-file-nul'], { cwd, env, input: `${pathspecs.join('\0')}\0` });
  return nested;
}

/**
 * Stage the worktree at `cwd` into the index named by `env.GIT_INDEX_FILE` (a temporary copy)
 * byte for byte, with no attribute applied: each file's bytes as they are on disk
 * (`git hash-object -w --no-filters`), each symlink's target (mode 120000), the execute bit kept,
 * tracked files that are gone removed, nested repositories left out as in {@link stageWorktree}.
 *
 * For a backup when {@link stageWorktree} fails: `git add` applies the worktree's own
 * `.gitattributes`, and a worker can make it fail on purpose (`working-tree-encoding=UTF-16` on
 * bytes that are not UTF-16: "failed to encode … from UTF-16 to UTF-8"; gitattributes(5)), which
 * blocked the backup and with it the removal of the worktree. Index lines per git-update-index(1)
 * "USING --INDEX-INFO" (`<mode> SP <sha1> TAB <path>`, `-z`: NUL-terminated).
 * @returns the nested repositories left out.
 * @throws PollyError `git_failed` when git cannot list or hash the files.
 */
export async function stageWorktreeRaw(git: GitRunner, cwd: string, env: Record<string, string>): Promise<NestedRepos> {
  const nested = await listNestedRepos(git, cwd, env);
  const skip = [...nested.gitlinks, ...nested.untracked];
  const listed = await git.run(['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd, env });
  const paths = [...new Set(listed.stdout.split('\0').filter((p) => p && !p.endsWith('/')))].filter((p) => !skip.some((n) => p === n || p.startsWith(`${n}/`)));
  const lines: string[] = [];
  // Regular files in one `hash-object --stdin-paths` (one path a line, C-quoted when it starts with
  // a double quote); a name holding a newline or starting with a quote alone.
  const batch: Array<{ p: string; mode: string }> = [];
  for (const p of paths) {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(join(cwd, p));
    } catch {
      lines.push(`0 ${'0'.repeat(40)}\t${p}`); // gone: out of the index
      continue;
    }
    if (st.isSymbolicLink()) {
      const oid = firstLine(await git.run(['hash-object', '-w', '--stdin'], { cwd, env, input: readlinkSync(join(cwd, p)) }));
      lines.push(`120000 ${oid}\t${p}`);
    } else if (st.isFile()) {
      const mode = st.mode & 0o111 ? '100755' : '100644';
      if (!p.includes('\n') && !p.startsWith('"')) batch.push({ p, mode });
      else lines.push(`${mode} ${firstLine(await git.run(['hash-object', '-w', '--no-filters', '--', p], { cwd, env }))}\t${p}`);
    }
  }
  if (batch.length > 0) {
    const r = await git.run(['hash-object', '-w', '--no-filters', '--stdin-paths'], { cwd, env, input: batch.map((b) => `${b.p}\n`).join('') });
    const oids = r.stdout.split('\n').filter(Boolean);
    for (const [i, b] of batch.entries()) lines.push(`${b.mode} ${oids[i]}\t${b.p}`);
  }
  if (lines.length > 0) await git.run(['update-index', '-z', '--index-info'], { cwd, env, input: `${lines.join('\0')}\0` });
  return nested;
}
