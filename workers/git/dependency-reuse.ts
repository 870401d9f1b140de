/**
 * Cheap worktree setup for npm projects: when the new worktree's `package-lock.json` is identical
 * to the main checkout's and the main checkout's `node_modules` was installed from it, copy that
 * `node_modules` (copy-on-write where the file system supports it: `cp --reflink=auto`, GNU
 * coreutils) instead of installing again. An install-only setup command (`npm ci …`,
 * `npm install …`) is then skipped; any other setup runs as configured.
 *
 * "Installed from it": npm (v7+) writes `node_modules/.package-lock.json`, the hidden lockfile of
 * what is installed (https://docs.npmjs.com/cli/v11/configuring-npm/package-lock-json#hidden-lockfiles),
 * no older than `package-lock.json`. Never hard links: a worker editing a file under its
 * `node_modules` must not change the main checkout's.
 */
import { existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { readRegularFile } from '../agents/state-dir-files.js';

/** What the reuse did, for the journal and the setup log. */
export interface DependencyReuse {
  reused: boolean;
  /** Why (copied from where, or why not). */
  reason: string;
  durationMs: number;
}

/** True when every `&&`-separated part of `command` is an npm install (`npm ci`, `npm install`, `npm i`). */
export function isNpmInstallOnly(command: string): boolean {
  return command.split('&&').every((part) => /^\s*npm\s+(ci|install|i)(\s+--?[a-z-]+(=\S+)?)*\s*$/.test(part));
}

/**
 * Copy `<mainRoot>/node_modules` into `<worktree>/node_modules` when the lockfiles match (see the
 * module comment). Never throws for a mismatch: it says why not.
 */
export async function reuseNodeModules(mainRoot: string, worktree: string): Promise<DependencyReuse> {
  const started = Date.now();
  const no = (reason: string): DependencyReuse => ({ reused: false, reason, durationMs: Date.now() - started });
  const lock = join(worktree, 'package-lock.json');
  const mainLock = join(mainRoot, 'package-lock.json');
  const hidden = join(mainRoot, 'node_modules', '.package-lock.json');
  if (!existsSync(lock) || !existsSync(mainLock)) return no('no package-lock.json in both the main checkout and the worktree');
  if (lstatOrNull(join(worktree, 'node_modules')) !== null) return no('the worktree has node_modules already');
  if (!existsSync(hidden)) return no('the main checkout has no node_modules installed by npm (node_modules/.package-lock.json)');
  // The worktree's lockfile may be a worker's symlink (to a FIFO, /dev/zero, a secret): read only
  // a regular file, never following a link or waiting on a pipe; anything else is "differs".
  const worktreeLock = readRegularFile(lock);
  if (worktreeLock === null || !worktreeLock.equals(readFileSync(mainLock))) return no("package-lock.json differs from the main checkout's");
  if (statSync(hidden).mtimeMs < statSync(mainLock).mtimeMs) return no("the main checkout's node_modules is older than its package-lock.json (run npm ci there)");
  const r = await execa('cp', ['-R', '--reflink=auto', join(mainRoot, 'node_modules'), join(worktree, 'node_modules')], { reject: false, all: true });
  if (r.exitCode !== 0)
    return no(
      `cp failed: ${
        String(r.all ?? '')
          .trim()
          .split('\n')[0]
      }`,
    );
  return { reused: true, reason: `node_modules copied from ${mainRoot} (package-lock.json identical)`, durationMs: Date.now() - started };
}

function lstatOrNull(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
