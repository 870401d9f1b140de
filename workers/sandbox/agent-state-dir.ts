/**
 * Where a repository's agent state lives: outside the repository (a worker must not reach it
 * through the worktree, and `git status` must not see it) and outside the OS temp dir (Codex
 * refuses to start its sandbox helper when `CODEX_HOME` is under it, and a reboot may clear it).
 *
 * `$XDG_STATE_HOME/polly/<repo-hash>/` (default `~/.local/state/polly/<repo-hash>/`, per the XDG
 * Base Directory Specification: https://specifications.freedesktop.org/basedir-spec/latest/),
 * `<repo-hash>` = the first 16 hex digits of sha256(realpath of the repository root), plus the
 * root's base name for people reading the directory.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';

/**
 * Polly's state root for this user (not created): `$XDG_STATE_HOME/polly`, default
 * `~/.local/state/polly`. `env` supplies `XDG_STATE_HOME` and `HOME` (default `process.env`); a
 * relative `XDG_STATE_HOME` is ignored, as the spec says.
 */
export function pollyStateRoot(env: NodeJS.ProcessEnv = process.env): string {
  const xdgEnv = env.XDG_STATE_HOME;
  const xdg = xdgEnv?.startsWith('/') ? xdgEnv : join(env.HOME || homedir(), '.local', 'state');
  return join(xdg, 'polly');
}

/**
 * The state root of `repoRoot` (not created). `env` supplies `XDG_STATE_HOME` and `HOME`
 * (default `process.env`); a relative `XDG_STATE_HOME` is ignored, as the spec says.
 */
export function repoStateDir(repoRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  let real = repoRoot;
  try {
    real = realpathSync(repoRoot);
  } catch {
    // not there (yet): hash the path as given
  }
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 16);
  const name = basename(real).replace(/[^A-Za-z0-9._-]/g, '_') || 'repo';
  return join(pollyStateRoot(env), `${name}-${hash}`);
}
