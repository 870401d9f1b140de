/**
 * What `worktrees.setup` installs from, and when it must run again in a worktree it already ran in.
 *
 * Why: a retried task keeps its worktree (brain/plan/plan-retry.ts). When the setup failed there, or
 * the user changed the command, or the lockfiles it installs from changed (the user committed one,
 * the agent added a dependency), the old install is wrong or missing: a Node project without its
 * `node_modules` resolves packages from the main checkout's (Node walks up the directories), and its
 * tools then write there and are refused by the sandbox. So Polly records, each time the setup runs,
 * the command, whether it succeeded and a digest of each lockfile ({@link SetupStamp}), and runs it
 * again when any of them differs ({@link setupRerunReason}).
 *
 * The lockfiles are the package managers' own names, at the worktree's top: npm
 * (`package-lock.json`, `npm-shrinkwrap.json`), Yarn (`yarn.lock`), pnpm (`pnpm-lock.yaml`), pip
 * (`requirements*.txt`), Poetry (`poetry.lock`), uv (`uv.lock`), Cargo (`Cargo.lock`), Go (`go.sum`).
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file names (at the worktree's top) whose content a setup installs from. */
const INPUT_NAMES = new Set(['package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', 'poetry.lock', 'uv.lock', 'Cargo.lock', 'go.sum']);
const REQUIREMENTS = /^requirements.*\.txt$/;

/** File name → the first 16 hex digits of its content's SHA-256; only the lockfiles that exist. */
export type SetupInputs = Record<string, string>;

/** The task's record of the last run of `worktrees.setup` in its worktree (TaskRecord.setup). */
export interface SetupStamp {
  command: string;
  /** Exit 0, not timed out, no ref-guard finding. */
  ok: boolean;
  inputs: SetupInputs;
  /** ISO time it ended. */
  at: string;
}

/**
 * The lockfiles at the top of `dir` (regular files only: a symbolic link is not followed) and the
 * digest of each.
 */
export function setupInputs(dir: string): SetupInputs {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return {};
  }
  const out: SetupInputs = {};
  for (const name of names.filter((n) => INPUT_NAMES.has(n) || REQUIREMENTS.test(n)).sort()) {
    const path = join(dir, name);
    try {
      if (!lstatSync(path).isFile()) continue;
      out[name] = createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The lockfiles that differ between two {@link setupInputs}: `name (added|removed|changed)`. */
export function changedInputs(before: SetupInputs, now: SetupInputs): string[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(now)])].sort();
  return names.flatMap((n) => {
    if (before[n] === now[n]) return [];
    return [`${n} (${before[n] === undefined ? 'added' : now[n] === undefined ? 'removed' : 'changed'})`];
  });
}

/**
 * Why the setup `command` must run again in a worktree whose last setup is `stamp` and whose
 * lockfiles are now `now` (pure), or null when it need not (or there is no setup command).
 * @param stamp  null/undefined: no record (a worktree from before Polly recorded it): it runs again.
 */
export function setupRerunReason(stamp: SetupStamp | null | undefined, command: string | null | undefined, now: SetupInputs): string | null {
  if (!command) return null;
  if (!stamp) return 'Polly has no record of it having run in this worktree';
  if (stamp.command !== command) return `the command changed since it ran there ("${stamp.command}")`;
  if (!stamp.ok) return 'it failed there last time';
  const changed = changedInputs(stamp.inputs, now);
  if (changed.length > 0) return `the files it installs from changed: ${changed.join(', ')}`;
  return null;
}
