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
import { closeSync, constants, type Dirent, lstatSync, openSync, readdirSync, readlinkSync, readSync } from 'node:fs';
import { join, resolve } from 'node:path';
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
 * (repository-relative files or directories: Polly's own artifacts, ./polly-artifacts.ts). A path
 * of `leaveOut` that git ignores is not named to git at all ({@link isIgnoredPath}): git leaves it
 * out by itself, and would refuse an exclude pathspec naming it.
 * `env`: extra variables for git (e.g. `GIT_INDEX_FILE`).
 * @returns the nested repositories left out.
 * @throws PollyError `git_failed` when git fails.
 */
export async function stageWorktree(git: GitRunner, cwd: string, env: Record<string, string> = {}, leaveOut: readonly string[] = []): Promise<NestedRepos> {
  const nested = await listNestedRepos(git, cwd, env);
  // An ignored path is never added by `git add --all`, so excluding it changes nothing, and git
  // refuses the whole add (exit 1, "The following paths are ignored by one of your .gitignore
  // files") when any pathspec, an exclude included, names an ignored path or one below an ignored
  // directory (dir.c exclude_matches_pathspec does not skip exclude items). Setup and checks make
  // exactly such paths: node_modules/ after `npm ci`, target/, dist/, *.egg-info.
  const ignored = leaveOut.length > 0 ? await ignoredUntracked(git, cwd, env) : null;
  const excluded = ignored ? leaveOut.filter((p) => !isIgnoredPath(p, ignored)) : [];
  // The pathspecs go on stdin, NUL-separated (git-add(1) --pathspec-from-file): a worker that made
  // thousands of nested repos would otherwise overflow the argument list (E2BIG) and block the commit.
  const pathspecs = [':/', ...nestedRepoExcludes(nested), ...excluded.map((p) => `:(exclude,top,literal)${p}`)];
  await git.run(['add', '--all', '--pathspec-from-file=-', '--pathspec-file-nul'], { cwd, env, input: `${pathspecs.join('\0')}\0` });
  return nested;
}

/**
 * The ignored untracked paths of the worktree at `cwd`: `git ls-files --others --ignored
 * --exclude-standard --directory` (git-ls-files(1)), a wholly ignored directory listed once as
 * `dir/` and not entered, an ignored file inside a directory that is not ignored listed itself.
 * Paths are repository-relative, as git prints them (`-z`: no quoting).
 * @throws PollyError `git_failed` when git cannot list them.
 */
export async function ignoredUntracked(git: GitRunner, cwd: string, env: Record<string, string> = {}): Promise<Set<string>> {
  const r = await git.run(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'], { cwd, env });
  return new Set(r.stdout.split('\0').filter(Boolean));
}

/**
 * Whether repository-relative `path` (no trailing slash) is ignored according to `ignored` (from
 * {@link ignoredUntracked}): listed itself, as a directory, or below a listed directory. Pure;
 * O(depth of `path`).
 */
export function isIgnoredPath(path: string, ignored: ReadonlySet<string>): boolean {
  if (ignored.has(path) || ignored.has(`${path}/`)) return true;
  for (let i = path.indexOf('/'); i > 0; i = path.indexOf('/', i + 1)) if (ignored.has(path.slice(0, i + 1))) return true;
  return false;
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

/** The name a nested repository's `.git` gets in a backup tree (git refuses a `.git` path component; verify_path in git's read-cache.c). */
export const BACKUP_GIT_DIR_NAME = '.git.polly-backup';

/**
 * Stage the nested repositories `nested` of the worktree at `cwd` (repository-relative
 * directories, from {@link listNestedRepos}) into the index named by `env.GIT_INDEX_FILE`, byte for
 * byte and without running git in any of them: every file and symlink below each directory, its
 * `.git` included under the name {@link BACKUP_GIT_DIR_NAME} (commits, branches, stash, index,
 * config: the repository as it was). A submodule's `.git` is a file naming its git dir; when that
 * git dir lies inside `adminDir` (the worktree's own admin dir, `.git/worktrees/<id>`, which goes
 * with the worktree), its files are staged as `<dir>/.git.polly-backup/` instead; a git dir
 * anywhere else is not read (a worker's gitfile could name `~/.ssh`). Meant for an index of its
 * own (a gitlink at one of the paths would be in the way).
 *
 * For a backup before a worktree is removed (./worktree-backup.ts): a repository a worker or a
 * person made inside the worktree, and uncommitted work or local commits inside a submodule, went
 * with the directory. Why no git inside them: their config is the worker's to write (see the
 * module doc); file reads use `lstat` and never follow a link; FIFOs, sockets and devices are
 * skipped. Restore: `git archive <backup> <dir> | tar -x`, then rename `.git.polly-backup` to `.git` (a submodule's
 * git dir also names its old work tree: `git config --file <dir>/.git/config --unset core.worktree`).
 * Index lines per git-update-index(1) "USING --INDEX-INFO".
 * @returns the repository-relative paths of the files staged (for the journal's count).
 * @throws PollyError `git_failed` when git cannot hash or stage the files.
 */
export async function stageNestedRepoFiles(git: GitRunner, cwd: string, env: Record<string, string>, nested: readonly string[], adminDir: string): Promise<string[]> {
  const files: Array<{ abs: string; path: string; mode: string }> = [];
  const links: Array<{ target: string; path: string }> = [];
  const admin = resolve(adminDir);
  const walk = (absDir: string, relDir: string, top: boolean): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(absDir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const abs = join(absDir, e.name);
      const name = e.name === '.git' ? BACKUP_GIT_DIR_NAME : e.name;
      const rel = `${relDir}/${name}`;
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(abs);
      } catch {
        continue;
      }
      if (st.isSymbolicLink()) links.push({ target: readlinkSync(abs), path: rel });
      else if (st.isDirectory()) walk(abs, rel, false);
      else if (st.isFile()) {
        const gitDir = top && e.name === '.git' ? gitfileTarget(abs, absDir) : null;
        if (gitDir !== null && (gitDir === admin || gitDir.startsWith(`${admin}/`))) walk(gitDir, rel, false);
        else files.push({ abs, path: rel, mode: st.mode & 0o111 ? '100755' : '100644' });
      }
    }
  };
  // A directory, each component a real one: a path through a link the worker planted is not read.
  const realDir = (rel: string): boolean =>
    rel.split('/').every((_, i, parts) => {
      try {
        const st = lstatSync(join(cwd, ...parts.slice(0, i + 1)));
        return st.isDirectory() && !st.isSymbolicLink();
      } catch {
        return false;
      }
    });
  for (const dir of nested) if (realDir(dir)) walk(join(cwd, dir), dir, true);
  const lines: string[] = [];
  for (const l of links) lines.push(`120000 ${firstLine(await git.run(['hash-object', '-w', '--stdin'], { cwd, env, input: l.target }))}\t${l.path}`);
  // Absolute paths, one a line: the names Polly chose are not what git reads (a `.git` renamed).
  const batch = files.filter((f) => !f.abs.includes('\n') && !f.abs.startsWith('"'));
  if (batch.length > 0) {
    const r = await git.run(['hash-object', '-w', '--no-filters', '--stdin-paths'], { cwd, env, input: batch.map((f) => `${f.abs}\n`).join('') });
    const oids = r.stdout.split('\n').filter(Boolean);
    for (const [i, f] of batch.entries()) lines.push(`${f.mode} ${oids[i]}\t${f.path}`);
  }
  for (const f of files.filter((x) => !batch.includes(x)))
    lines.push(`${f.mode} ${firstLine(await git.run(['hash-object', '-w', '--no-filters', '--', f.abs], { cwd, env }))}\t${f.path}`);
  if (lines.length > 0) await git.run(['update-index', '-z', '--index-info'], { cwd, env, input: `${lines.join('\0')}\0` });
  return [...files.map((f) => f.path), ...links.map((l) => l.path)];
}

/** The git dir a gitfile (`gitdir: <path>`, gitrepository-layout(5)) names, resolved from `base`, or null. Reads at most 4 KiB, never follows a link. */
function gitfileTarget(file: string, base: string): string | null {
  let text: string;
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const buf = Buffer.alloc(4096);
      text = buf.subarray(0, readSync(fd, buf, 0, 4096, 0)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  const m = /^gitdir: (.+)$/m.exec(text);
  return m ? resolve(base, m[1]!.trim()) : null;
}
