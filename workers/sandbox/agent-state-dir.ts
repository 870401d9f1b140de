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

/** Top-level system directories a sandbox needs: a variable pointing at one of them (or above) is not hidden. */
const SYSTEM_DIRS: readonly string[] = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/nix', '/var', '/proc', '/dev', '/sys'];

/**
 * The host's per-user directories every sandbox hides (covered by an empty tmpfs, the worker's
 * own state bound back on top), wherever the variables of `env` point: `XDG_STATE_HOME`
 * (Polly's and so every task's and every repository's agent state), `XDG_DATA_HOME`,
 * `XDG_CONFIG_HOME`, `XDG_CACHE_HOME`, `XDG_RUNTIME_DIR` (the user's sockets: D-Bus, gpg-agent,
 * Wayland) and `TMPDIR` (Polly's own temp dir: other sandboxes' network bridge sockets), plus
 * {@link pollyStateRoot} itself. Under the default layout they are under HOME, `/run` or `/tmp`,
 * hidden already; a variable set elsewhere would otherwise show the host's directory read-only.
 * Skipped: relative values (the XDG Base Directory Specification ignores them), `/` and any
 * system directory or one above it (`/usr`, `/var`, …: hiding it would take the toolchains away;
 * Polly's state root below it is still hidden). Pure; absolute paths, deduplicated, in that order.
 */
export function hostUserDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const out = new Set<string>();
  const above = (dir: string, sys: string) => sys === dir || sys.startsWith(`${dir}/`);
  for (const name of ['XDG_STATE_HOME', 'XDG_DATA_HOME', 'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'XDG_RUNTIME_DIR', 'TMPDIR']) {
    const value = env[name];
    if (!value?.startsWith('/')) continue;
    const dir = value.replace(/\/+$/, '');
    if (dir === '' || SYSTEM_DIRS.some((sys) => above(dir, sys))) continue;
    out.add(dir);
  }
  out.add(pollyStateRoot(env));
  return [...out];
}
