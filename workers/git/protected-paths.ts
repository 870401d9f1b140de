/**
 * Protected paths: files whose change alters what Polly, CI or a code host does next (Polly's own
 * config, CI and automation workflows, hook managers, code owners, `.worktreeinclude`), which a
 * task's commit may change only when its plan task declares them (`protected_paths`, shown to the
 * human at the plan gate). A PR that set `.polly/config.yaml` to hand workers a token, or added
 * `.github/workflows/x.yml` (GitHub runs a pushed branch's workflows with the repository's
 * secrets), went through staging unflagged before this.
 *
 * Patterns are git pathspecs with glob magic (gitglossary(7), "pathspec", `glob`: `*` does not
 * cross `/`, `**` does), relative to the worktree root; git itself matches them, against exactly
 * what is staged. Config: `worktrees.protected_paths` (default {@link DEFAULT_PROTECTED_PATHS}).
 *
 * This module owns a task's whole path contract at staging ({@link pathContractBreach}): the
 * protected paths need their explicit declaration, and a task whose plan declares `paths`
 * (issue 29) may change nothing else. The same dialect outside git: ./path-globs.ts.
 */
import { PollyError } from '../../brain/core/errors.js';
import type { GitRunner } from './git.js';

/** The default protected paths (config `worktrees.protected_paths`). */
export const DEFAULT_PROTECTED_PATHS: readonly string[] = [
  '.polly/**',
  '.github/workflows/**',
  '.github/actions/**',
  '.gitlab-ci.yml',
  '.circleci/**',
  'Jenkinsfile',
  '.buildkite/**',
  'azure-pipelines.yml',
  '.worktreeinclude',
  '.husky/**',
  '.pre-commit-config.yaml',
  'CODEOWNERS',
  '.github/CODEOWNERS',
  'docs/CODEOWNERS',
];

/**
 * Why `pattern` cannot be a protected or declared path, or null when it can: it must be relative
 * to the repository root, without `..`, and without pathspec magic of its own (Polly adds `glob`).
 */
export function protectedPatternProblem(pattern: string): string | null {
  if (pattern.trim() === '') return 'an empty pattern';
  if (pattern.startsWith('/')) return 'an absolute path (patterns are relative to the repository root, e.g. ".github/workflows/**")';
  if (pattern.startsWith(':')) return 'pathspec magic (write the plain glob; Polly matches it as a git glob pathspec)';
  if (pattern.split('/').includes('..')) return 'a ".." segment';
  return null;
}

const glob = (p: string): string => `:(glob)${p}`;

/**
 * What a task's commit may change: the protected patterns in force, the protected paths its plan
 * declares, and its declared `paths` (null: unbounded, any file but the protected ones).
 */
export interface PathContract {
  /** Config `worktrees.protected_paths` (default {@link DEFAULT_PROTECTED_PATHS}). */
  protectedPatterns: readonly string[];
  /** Plan key `protected_paths`: the protected paths this task may change. */
  declaredProtected: readonly string[];
  /** Plan key `paths`: the paths this task may change besides its declared protected ones; null: any. */
  paths: readonly string[] | null;
}

/** The staged paths a commit may not carry: protected ones not declared, and others outside the task's `paths` (each path once, protected first; sorted). */
export interface PathContractBreach {
  protected: string[];
  outside: string[];
}

/**
 * The staged changes in `cwd` (index against `HEAD`, renames as their two paths) that match a
 * pathspec of `include` and none of `exclude`, sorted. During a merge (`MERGE_HEAD` exists) a
 * path counts only when it differs from the merged side too: a file the base changed and the
 * worker left alone is the base's change, not the task's.
 * @throws PollyError `git_failed` from git.
 */
async function stagedChanges(git: GitRunner, cwd: string, include: readonly string[], exclude: readonly string[]): Promise<string[]> {
  if (include.length === 0) return [];
  const specs = ['--', ...include, ...exclude.map((d) => `:(exclude,glob)${d}`)];
  const names = async (against: string): Promise<Set<string>> => {
    const r = await git.run(['diff', '--cached', '--name-only', '-z', '--no-renames', against, ...specs], { cwd });
    return new Set(r.stdout.split('\0').filter((p) => p !== ''));
  };
  const head = await git.run(['rev-parse', '--verify', '-q', 'HEAD'], { cwd, okExitCodes: [1] });
  // An unborn branch: everything staged is new (the empty tree's id, from `git hash-object -t tree /dev/null`).
  const changed = await names(head.exitCode === 0 ? 'HEAD' : '4b825dc642cb6eb9a060e54bf8d69288fbee4904');
  const merging = await git.run(['rev-parse', '--verify', '-q', 'MERGE_HEAD'], { cwd, okExitCodes: [1] });
  if (merging.exitCode === 0 && changed.size > 0) {
    const fromMerged = await names('MERGE_HEAD');
    for (const p of [...changed]) if (!fromMerged.has(p)) changed.delete(p);
  }
  return [...changed].sort();
}

/**
 * The staged changes in `cwd` that match a `protectedPatterns` pathspec and no `declared` one,
 * sorted (merge rule: see {@link pathContractBreach}).
 * @throws PollyError `git_failed` from git.
 */
export async function protectedChanges(git: GitRunner, cwd: string, protectedPatterns: readonly string[], declared: readonly string[] = []): Promise<string[]> {
  return stagedChanges(git, cwd, protectedPatterns.map(glob), declared);
}

/**
 * What the staged changes in `cwd` break of `contract`: protected paths not declared, and with
 * declared `paths` every other change that matches neither them nor a declared protected path.
 * During a merge a path counts only when it differs from the merged side too (the base's
 * changes are not the task's). Git matches the globs, against exactly what is staged.
 * @throws PollyError `git_failed` from git.
 */
export async function pathContractBreach(git: GitRunner, cwd: string, contract: PathContract): Promise<PathContractBreach> {
  const prot = await protectedChanges(git, cwd, contract.protectedPatterns, contract.declaredProtected);
  if (contract.paths === null) return { protected: prot, outside: [] };
  const known = new Set(prot);
  const outside = (await stagedChanges(git, cwd, ['.'], [...contract.paths, ...contract.declaredProtected])).filter((p) => !known.has(p));
  return { protected: prot, outside };
}

/**
 * The error a commit gets when it breaks its task's path contract: the paths, why each kind is
 * refused, and what to do. Code `protected_path` (the one path-contract refusal; details
 * `{task, paths, protected, outside, allowed}`).
 */
export function pathContractError(taskId: string, breach: PathContractBreach, allowed: readonly string[] | null): PollyError {
  const parts: string[] = [];
  if (breach.protected.length > 0) {
    parts.push(
      `changed protected paths its plan did not declare: ${breach.protected.join(', ')} (these files steer Polly, CI or the code host: worktrees.protected_paths in .polly/config.yaml; only a plan task that names them in protected_paths may change them)`,
    );
  }
  if (breach.outside.length > 0) parts.push(`changed paths outside its declared paths (${(allowed ?? []).join(', ')}): ${breach.outside.join(', ')}`);
  return new PollyError('protected_path', `task ${taskId} ${parts.join('; and ')}; nothing was committed.`, {
    details: {
      task: taskId,
      paths: [...breach.protected, ...breach.outside],
      protected: [...breach.protected],
      outside: [...breach.outside],
      allowed: allowed ? [...allowed] : null,
    },
  });
}
