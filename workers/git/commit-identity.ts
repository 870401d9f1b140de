/**
 * Who Polly's commits are by: the repository's own git identity, as git itself would resolve it.
 *
 * Polly runs git with every `GIT_*` variable removed (workers/git/git.ts), so the identity
 * variables a user set (`GIT_AUTHOR_NAME`, `GIT_AUTHOR_EMAIL`, `GIT_COMMITTER_NAME`,
 * `GIT_COMMITTER_EMAIL`, git-commit-tree(1) "Commit Information") are passed back explicitly, and
 * `git var GIT_AUTHOR_IDENT` / `GIT_COMMITTER_IDENT` (git-var(1)) resolves them against
 * `author.*`, `committer.*` and `user.*` config with `user.useConfigOnly=true`, so git fails
 * instead of guessing `user@hostname`. Only then does Polly fall back to `Polly <polly@localhost>`,
 * and says so in `source`.
 */
import type { GitRunner } from './git.js';

/** One side of a commit's identity and where it came from. */
export interface GitIdentity {
  name: string;
  email: string;
  /** `environment`: GIT_<ROLE>_NAME and _EMAIL the user set; `git config`: author/committer/user config; `polly fallback`: none was set. */
  source: 'environment' | 'git config' | 'polly fallback';
}

export interface CommitIdentity {
  author: GitIdentity;
  committer: GitIdentity;
  /** The GIT_AUTHOR_* / GIT_COMMITTER_* variables to give the committing git call (always all four). */
  env: Record<string, string>;
}

/** The identity variables git reads (git-commit-tree(1)). */
export const IDENTITY_VARIABLES = ['GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL'] as const;

export const POLLY_FALLBACK_IDENTITY = { name: 'Polly', email: 'polly@localhost' } as const;

/** `Name <email> 1700000000 +0000` → name and email; null when it does not parse. */
export function parseIdent(line: string): { name: string; email: string } | null {
  const m = /^(.*?) <([^>]*)> \d+ [+-]\d{4}$/.exec(line.trim());
  return m ? { name: m[1]!, email: m[2]! } : null;
}

/**
 * Resolve the author and committer identity of commits made in `cwd`.
 * @param parentEnv  the user's environment (its GIT_AUTHOR_* / GIT_COMMITTER_* are honoured).
 * @returns both identities with their source, and the env that makes git use exactly them.
 */
export async function resolveCommitIdentity(git: GitRunner, cwd: string, parentEnv: NodeJS.ProcessEnv = process.env): Promise<CommitIdentity> {
  const userVars: Record<string, string> = {};
  for (const k of IDENTITY_VARIABLES) {
    const v = parentEnv[k];
    if (v !== undefined && v !== '') userVars[k] = v;
  }
  const resolve = async (role: 'AUTHOR' | 'COMMITTER'): Promise<GitIdentity> => {
    const r = await git.run(['-c', 'user.useConfigOnly=true', 'var', `GIT_${role}_IDENT`], { cwd, env: userVars, okExitCodes: [128] });
    const ident = r.exitCode === 0 ? parseIdent(r.stdout) : null;
    if (!ident || ident.email === '') return { ...POLLY_FALLBACK_IDENTITY, source: 'polly fallback' };
    const fromEnv = userVars[`GIT_${role}_NAME`] !== undefined && userVars[`GIT_${role}_EMAIL`] !== undefined;
    return { ...ident, source: fromEnv ? 'environment' : 'git config' };
  };
  const author = await resolve('AUTHOR');
  const committer = await resolve('COMMITTER');
  return {
    author,
    committer,
    env: { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, GIT_COMMITTER_NAME: committer.name, GIT_COMMITTER_EMAIL: committer.email },
  };
}

/** `Name <email> (from git config)`, and the committer too when it differs. */
export function describeIdentity(identity: Pick<CommitIdentity, 'author' | 'committer'>): string {
  const one = (i: GitIdentity) =>
    `${i.name} <${i.email}> (${i.source === 'polly fallback' ? "Polly's fallback: set user.name and user.email with git config" : `from ${i.source}`})`;
  const a = one(identity.author);
  const c = one(identity.committer);
  return a === c ? a : `author ${a}, committer ${c}`;
}

/**
 * Paths with uncommitted changes in the checkout at `root` (staged, unstaged and untracked, as
 * `git status --porcelain=v1 -z` reports them, git-status(1)), minus Polly's own `.polly/` and
 * `.worktrees/`. Worktrees start from a commit, so none of these reach a worker.
 */
export async function uncommittedChanges(git: GitRunner, root: string): Promise<string[]> {
  const r = await git.run(['status', '--porcelain=v1', '-z', '--untracked-files=normal'], { cwd: root });
  const out: string[] = [];
  const entries = r.stdout.split('\0');
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.length < 4) continue;
    const path = e.slice(3);
    if (e[0] === 'R' || e[0] === 'C') i++; // the source path of a rename or copy follows
    if (path.startsWith('.polly/') || path === '.polly' || path.startsWith('.worktrees/') || path === '.worktrees') continue;
    out.push(path);
  }
  return out;
}
