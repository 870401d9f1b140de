/**
 * The program a sandbox runs, when it lives where the sandbox hides: an agent CLI installed under
 * the real `$HOME` (`npm i -g` with a prefix in HOME, `~/.local/bin`, nvm) or under `/tmp`, or a
 * `command:` path in config pointing there. Inside the sandbox the real HOME is an empty tmpfs and
 * `/tmp` a fresh one, so `execvp` would fail with a bare "No such file or directory".
 *
 * {@link resolveSandboxExecutable} finds the program as `execvp` would (a name with a `/` as given,
 * else the first executable `PATH` entry, see execvp(3)), follows symlinks to the real file (an npm
 * bin link points into `<prefix>/lib/node_modules/<package>/…`), and, only when that file is hidden
 * inside the sandbox, returns the real path to run and the directory to bind read-only: the nearest
 * ancestor holding a `package.json` (the package, its own `node_modules` included: a global install
 * carries its dependencies and a vendor binary such as codex's there), else the file's directory.
 * Never a whole hidden root (HOME itself) nor `/`: then only the file's directory. With an empty
 * root (./system-view.ts), a program outside every bound path (`/opt/tool/bin/x` named by path) is
 * hidden as well, and bound the same way.
 */
import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';

/** What to run inside the sandbox, and what to bind read-only for it. */
export interface SandboxExecutable {
  /** The command to give bwrap: unchanged when visible, else the real absolute path. */
  command: string;
  /** Paths to bind read-only (empty when the program is visible inside as it is). */
  readOnly: string[];
}

function under(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** Whether `path` is a regular file this process may execute (stat + access X_OK); false when absent. */
export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The file `execvp` would run for `command` with `pathVar`, relative to `cwd`; null when none. */
export function whichExecutable(command: string, pathVar: string | undefined, cwd: string): string | null {
  if (command.includes('/')) {
    const p = resolve(cwd, command);
    return isExecutableFile(p) ? p : null;
  }
  for (const dir of (pathVar ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    const p = join(resolve(cwd, dir || '.'), command);
    if (isExecutableFile(p)) return p;
  }
  return null;
}

/**
 * Resolve `command` for a sandbox whose `hidden` paths (and `/tmp`) are covered, and where the
 * paths in `visible` (writable and read-only binds) are bound back. See the module doc.
 * `system`: the host paths the sandbox shows besides (./system-view.ts `binds`); when given, a
 * path under neither `system` nor `visible` is hidden too (the sandbox's root is empty).
 * A program that cannot be found is returned unchanged (bwrap's own error then names it).
 */
export function resolveSandboxExecutable(
  command: string,
  env: { PATH?: string | undefined },
  cwd: string,
  hidden: readonly string[],
  visible: readonly string[],
  system?: readonly string[],
): SandboxExecutable {
  const found = whichExecutable(command, env.PATH, cwd);
  if (!found) return { command, readOnly: [] };
  let real: string;
  try {
    real = realpathSync(found);
  } catch {
    return { command, readOnly: [] };
  }
  const covers = [...hidden, '/tmp'];
  const bound = (p: string) => visible.some((v) => under(p, v));
  const isHidden = (p: string) => (covers.some((h) => under(p, h)) || (system !== undefined && !system.some((v) => under(p, v)))) && !bound(p);
  if (!isHidden(found) && !isHidden(real)) return { command, readOnly: [] };
  if (!isHidden(real)) return { command: real, readOnly: [] };
  const hiddenRoots = covers.filter((h) => under(real, h));
  let dir = dirname(real);
  let pkg: string | null = null;
  for (let d = dir; !hiddenRoots.some((h) => d === h) && d !== dirname(d); d = dirname(d)) {
    if (existsSync(join(d, 'package.json'))) {
      pkg = d;
      break;
    }
  }
  if (pkg) dir = pkg;
  return { command: real, readOnly: [dir] };
}
