/**
 * Finding the real `git` / `gh` behind Polly's shims: the first executable of that name on PATH
 * outside the shim directory (a shim never runs itself).
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The first executable `name` on PATH outside `skipDir`. */
export function findReal(name: string, path: string, skipDir: string): string | null {
  const skip = real(skipDir);
  for (const dir of path.split(':')) {
    if (dir === '' || real(dir) === skip) continue;
    const candidate = `${dir}/${name}`;
    try {
      accessSync(candidate, constants.X_OK);
      if (!statSync(candidate).isFile()) continue;
      if (real(candidate).startsWith(`${skip}/`)) continue;
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
