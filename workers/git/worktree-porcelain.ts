/**
 * Parser for `git worktree list --porcelain -z` (git ≥ 2.36).
 *
 * Format (git-worktree(1), "Porcelain Format"): one record per worktree; each attribute is
 * `label` or `label SP value` terminated by NUL, and a record ends with an extra NUL (an empty
 * attribute). Labels: `worktree <path>` (first), `HEAD <oid>`, `branch <ref>`, `detached`, `bare`,
 * `locked [reason]`, `prunable [reason]`. Unknown labels are ignored so a newer git does not break
 * the parser.
 */

/** One worktree as git reports it. */
export interface WorktreeEntry {
  /** Absolute path as registered (the directory may be missing: see `prunable`). */
  path: string;
  /** The checked-out commit, or null (bare repository, or unborn). */
  head: string | null;
  /** Full ref name (`refs/heads/…`) or null when detached or bare. */
  branch: string | null;
  bare: boolean;
  detached: boolean;
  /** Lock reason ('' when locked without a reason), or null when not locked. */
  locked: string | null;
  /** Why git would prune it ('' when no reason given), or null when not prunable. */
  prunable: string | null;
}

/**
 * Parse the NUL-separated porcelain output.
 * @throws Error (a bug, not bad input) when an attribute appears before any `worktree` line.
 */
export function parseWorktreeListPorcelainZ(output: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | null = null;
  for (const field of output.split('\0')) {
    if (field === '') {
      if (current) entries.push(current);
      current = null;
      continue;
    }
    const sp = field.indexOf(' ');
    const label = sp === -1 ? field : field.slice(0, sp);
    const value = sp === -1 ? null : field.slice(sp + 1);
    if (label === 'worktree') {
      if (current) entries.push(current);
      current = { path: value ?? '', head: null, branch: null, bare: false, detached: false, locked: null, prunable: null };
      continue;
    }
    if (!current) throw new Error(`worktree porcelain: "${label}" before any "worktree" line`);
    switch (label) {
      case 'HEAD':
        current.head = value;
        break;
      case 'branch':
        current.branch = value;
        break;
      case 'detached':
        current.detached = true;
        break;
      case 'bare':
        current.bare = true;
        break;
      case 'locked':
        current.locked = value ?? '';
        break;
      case 'prunable':
        current.prunable = value ?? '';
        break;
      default:
        break; // forward compatible: ignore labels a newer git adds
    }
  }
  if (current) entries.push(current);
  return entries;
}
