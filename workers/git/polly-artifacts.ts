/**
 * Files Polly's own commands made in a worktree, left out of the task's commits.
 *
 * Why: `worktrees.setup` (`python3 -m venv .venv && …`, an install) and the acceptance checks
 * (pytest's `__pycache__/`, coverage files, build output) write into the worktree. In a project
 * with no `.gitignore` for them, `git add --all` took them into the task's commit: a newcomer's
 * first PR carried `.venv/` (2,449 files, 457,925 lines) or the checks' bytecode. They are
 * Polly's, not the worker's, so Polly records them and its staging leaves them out
 * (./nested-repos.ts {@link import('./nested-repos.js').stageWorktree}); the secret scan skips them
 * too, as they are never committed. A file the worker itself makes is committed as before.
 *
 * What counts: the paths `git ls-files --others --directory` lists after the command that it did
 * not list before (git-ls-files(1): untracked, ignored or not, a directory whose content is all
 * untracked shown once as `dir/`). Ignored paths count too, because the ignore rules are the
 * worker's: a check it wrote could rewrite `.gitignore` during the run to un-ignore a file it had
 * made, which then looked new, was recorded, and was left out of the commit the checks had passed on. A directory that was already untracked before
 * the command (e.g. a new `tests/` the worker wrote) is not looked into, so what the checks add
 * inside it is committed, as before.
 *
 * Where: `<the worktree's git dir>/polly-artifacts` (`git rev-parse --git-path`, the worktree's own
 * admin directory under `.git/worktrees/<id>/`, read-only inside the sandbox), one path per line,
 * NUL-terminated, relative to the worktree's top, without a trailing slash. Written only by Polly
 * (temp file + rename) and read with {@link readRegularFile}: no link is followed either way.
 * Removed with the worktree.
 */
import { dirname } from 'node:path';
import { readRegularFile, writeFileBelow } from '../agents/state-dir-files.js';
import { firstLine, type GitRunner } from './git.js';

/** The file that lists a worktree's artifacts (absolute). */
async function artifactsFile(git: GitRunner, cwd: string): Promise<string> {
  return firstLine(await git.run(['rev-parse', '--path-format=absolute', '--git-path', 'polly-artifacts'], { cwd }));
}

/**
 * The untracked paths (ignored or not) of the worktree at `cwd`, directories whose content is all
 * untracked collapsed to one entry (with a trailing `/`). Pass it to {@link recordArtifacts} after
 * the command.
 * @throws PollyError `git_failed` when git cannot list them.
 */
export async function untrackedPaths(git: GitRunner, cwd: string): Promise<Set<string>> {
  // Ignored paths too (no --exclude-standard): the ignore rules are the worker's (its .gitignore),
  // and a check it wrote could un-ignore its own file during the run, which would then look new.
  const r = await git.run(['ls-files', '-z', '--others', '--directory', '--no-empty-directory'], { cwd });
  return new Set(r.stdout.split('\0').filter(Boolean));
}

/**
 * Record as Polly's artifacts the untracked paths of the worktree at `cwd` that were not in
 * `before` ({@link untrackedPaths} taken before the command), added to those already recorded.
 * @returns the paths recorded now (repository-relative, no trailing slash).
 * @throws PollyError `git_failed` when git cannot list them; an fs error when the file cannot be written.
 */
export async function recordArtifacts(git: GitRunner, cwd: string, before: ReadonlySet<string>): Promise<string[]> {
  const after = await untrackedPaths(git, cwd);
  const added = [...after].filter((p) => !before.has(p)).map((p) => p.replace(/\/$/, ''));
  if (added.length === 0) return [];
  const file = await artifactsFile(git, cwd);
  const all = new Set([...readArtifactsFile(file), ...added]);
  writeFileBelow(dirname(file), file, [...all].map((p) => `${p}\0`).join('')); // temp file + rename: no link followed
  return added;
}

/**
 * The artifacts recorded for the worktree at `cwd` (repository-relative paths of files or
 * directories, no trailing slash), or none.
 * @throws PollyError `git_failed` when git cannot name the file.
 */
export async function readArtifacts(git: GitRunner, cwd: string): Promise<string[]> {
  return readArtifactsFile(await artifactsFile(git, cwd));
}

function readArtifactsFile(file: string): string[] {
  const bytes = readRegularFile(file);
  return bytes === null ? [] : bytes.toString('utf8').split('\0').filter(Boolean);
}

/**
 * Whether repository-relative `path` is one of `artifacts` or lies below one. Pure. Pass a Set
 * ({@link artifactSet}) when testing many paths: each test is then O(depth of `path`), not
 * O(number of artifacts); a worker's test that made tens of thousands of files during Polly's
 * acceptance run made the secret scan's filter quadratic, blocking Polly's event loop.
 */
export function isArtifact(path: string, artifacts: readonly string[] | ReadonlySet<string>): boolean {
  const set = artifacts instanceof Set ? artifacts : new Set(artifacts);
  if (set.size === 0) return false;
  for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) if (set.has(path.slice(0, i))) return true;
  return set.has(path);
}

/** `artifacts` as a Set for {@link isArtifact}. Pure. */
export function artifactSet(artifacts: readonly string[]): ReadonlySet<string> {
  return new Set(artifacts);
}
