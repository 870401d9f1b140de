/**
 * Lexical path handling for the gate (pure: no file system access). Paths are POSIX.
 */
import type { GateContext } from './types.js';

/** Marks a part of a word the gate could not resolve statically (an expansion, a substitution). */
export const UNKNOWN = '\u0000';

/** Normalise an absolute POSIX path lexically: collapse `//`, `.`, `..` (never above `/`). */
export function normalizePath(path: string): string {
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}

/**
 * Resolve a word used as a path to an absolute normalised path.
 * `~` and `~/x` expand to `home`; relative paths resolve against `cwd`.
 * @returns null when the word holds an unresolved part or `cwd` is unknown for a relative path.
 */
export function resolvePath(raw: string, cwd: string | null, home: string): string | null {
  if (raw.includes(UNKNOWN) || raw === '') return null;
  let p = raw;
  if (p === '~' || p.startsWith('~/')) p = home + p.slice(1);
  else if (p.startsWith('~')) return null; // ~user: another user's home
  if (!p.startsWith('/')) {
    if (cwd === null) return null;
    p = `${cwd}/${p}`;
  }
  return normalizePath(p);
}

/** True when `path` is `dir` or lies under it (both absolute, normalised). */
export function isUnder(path: string, dir: string): boolean {
  const d = normalizePath(dir);
  return path === d || path.startsWith(d === '/' ? '/' : `${d}/`);
}

/** The static directory prefix of a glob path (`/a/b*` → `/a`), or the path itself without glob characters. */
export function globPrefix(path: string): { prefix: string; glob: boolean; firstGlobSegment: string } {
  const segs = path.split('/');
  const i = segs.findIndex((s) => /[*?[]/.test(s));
  if (i < 0) return { prefix: path, glob: false, firstGlobSegment: '' };
  return { prefix: normalizePath(segs.slice(0, i).join('/') || '/'), glob: true, firstGlobSegment: segs[i] ?? '' };
}

/** Directory names that are protected wherever they appear: git metadata, hooks, agents' and the gate's settings. */
export const PROTECTED_SEGMENTS: ReadonlySet<string> = new Set(['.git', '.claude', '.codex', '.pi', '.polly', '.husky', '.githooks']);

/**
 * Why writing `path` would touch a protected location, or null. `path` is absolute and normalised,
 * or a relative/unresolved word (then only its segments are checked).
 */
export function protectedReason(path: string, context: GateContext): string | null {
  const segs = path.split('/');
  for (const original of segs) {
    // case-insensitive: on case-insensitive file systems `.GIT` is `.git`
    const seg = original.toLowerCase();
    if (PROTECTED_SEGMENTS.has(seg)) {
      if (seg === '.git') return `${path} is inside git metadata (.git): hooks, config and refs are not the agent's to change`;
      if (seg === '.polly') return `${path} is Polly's own state or gate configuration (.polly)`;
      if (seg === '.husky' || seg === '.githooks') return `${path} is a hook directory`;
      return `${path} is an agent's own settings directory (${seg}): the gate's hooks live there`;
    }
    if (/^\.git[\w.-]*$/.test(seg) && seg !== '.gitignore' && seg !== '.gitattributes' && seg !== '.github' && seg !== '.gitkeep') {
      if (seg === '.gitmodules') continue;
      return `${path} names git metadata (${seg})`;
    }
  }
  // another repository's git dir (a bare `*.git` repository, refs, packed-refs) — temp dirs included
  const lower = path.toLowerCase();
  const inner = segs.slice(0, -1).map((x) => x.toLowerCase());
  if (inner.some((x) => x.endsWith('.git') && x.length > 4))
    return `${path} is inside a git repository's metadata (a *.git directory): refs, HEAD, config and hooks are not the agent's to change`;
  if (/(^|\/)refs\/(heads|tags|remotes|notes)(\/|$)/.test(lower) || /(^|\/)(packed-refs|orig_head|fetch_head)$/.test(lower)) {
    return `${path} looks like git refs (refs/heads, packed-refs): writing refs by hand moves branches in a repository`;
  }
  for (const dir of context.protectedDirs ?? []) {
    if (path.startsWith('/') && isUnder(path, dir)) return `${path} is inside the gate's own state directory ${dir}`;
  }
  return null;
}

/** Devices any role may write to (discarding output is not a write). */
export function isHarmlessDevice(path: string): boolean {
  return path === '/dev/null' || path === '/dev/stdout' || path === '/dev/stderr' || path === '/dev/tty' || path.startsWith('/dev/fd/');
}

/** True when `path` lies in a scratch directory. */
export function isTempPath(path: string, context: GateContext): boolean {
  const dirs = context.tempDirs ?? ['/tmp', '/var/tmp'];
  return dirs.some((d) => isUnder(path, d) && normalizePath(d) !== path);
}
