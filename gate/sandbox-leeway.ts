/**
 * What the gate leaves to the sandbox ("the gate explains, the sandbox holds"; docs/security.md).
 *
 * When an implementer runs inside Polly's OS sandbox (`GateContext.sandboxed`, set by the worker
 * runner), a command is not denied merely because the gate cannot see all of it:
 * - a write target with a part produced at run time (`"$(dirname src/a.ts)"`, `"$f.bak"` in a loop,
 *   `"$TMPDIR/cache"`, `{a,b}`), unless its visible directory is outside the worktree and temp dirs,
 *   its visible parts name git metadata, a hook directory or an agent's settings, its file name is
 *   a hook's or an agent settings file's, or the command mentions such a place anywhere (the write
 *   could be into it);
 * - a recursive delete whose target ends in a literal name (`rm -rf "$TMPDIR/cache"`); one wholly
 *   produced at run time (`rm -rf "$X"`, `"$X"/*`) could be `/` or `~` and stays denied;
 * - a variable holding a fresh `mktemp` name, when nothing else assigns it, is a temp path
 *   (./shell/assignments.ts `freshTempVariables`);
 * - a program named by a path the gate cannot resolve but whose own name it reads
 *   (`"$(go env GOPATH)/bin/misspell"` is judged as `misspell`);
 * - interpreter one-liners (`node -e`, `python3 -c`, `python3 - <<EOF`) whose code runs programs,
 *   builds paths or holds expansions: every command the code spells in its string literals is still
 *   judged, and a seed policy it names is denied (`subprocess.run(["git","push","-f"])`).
 * The sandbox holds the rest: the root is read-only; the worktree, a private /tmp and a private HOME
 * are the only writable places; git metadata is read-only; no route reaches a forge.
 *
 * The seed's named policies stay denied in every spelling the gate can see (force-push, reset
 * --hard, clean -f, branch -D, merges, rm -rf of / ~ $HOME or outside the worktree, pushes to the
 * default branch, remote branch deletion, writes into .git, hooks and agents' settings). Unconfined
 * (`workers.allow_unconfined`) nothing here applies: the gate is as strict as before. Pure.
 */
import { UNKNOWN, isTempPath, isUnder, protectedReason, resolvePath } from './paths.js';
import type { GateContext, GateFinding, GateRole } from './types.js';

/** Rules that only say "the gate cannot see this": everything else is a seed policy, denied in every spelling. */
const UNSEEN_RULES = new Set([
  'blast_radius.unresolved_path',
  'blast_radius.unresolved_command',
  'blast_radius.hidden_command',
  'blast_radius.interpreter',
  'blast_radius.parse_error',
]);

/** True when `rule` is a seed policy (force_push, rm, merge, protected_path, outside_worktree …), not a "cannot see" rule. */
export function isNamedPolicyRule(rule: string): boolean {
  return !UNSEEN_RULES.has(rule) && rule !== 'internal_error';
}

/** True when the gate leaves what it cannot resolve to the sandbox: an implementer, inside Polly's sandbox. */
export function sandboxHolds(role: GateRole, context: GateContext): boolean {
  return role === 'implement' && context.sandboxed === true;
}

/** Mentions of git metadata, hook directories and agents' or Polly's settings in a command's text. */
const PROTECTED_MENTION = /(^|[^\w])\.(git|claude|codex|pi|polly|husky|githooks)([^\w]|$)|hooksPath|core\.hooks/i;
/** File names that are a git hook or an agent's settings wherever their directory is. */
const PROTECTED_FILE =
  /^(settings(\.local)?\.json|config\.toml|(pre|post)-(commit|push|checkout|merge|rewrite|receive|rebase|applypatch|auto-gc)|commit-msg|prepare-commit-msg|applypatch-msg|update|fsmonitor-watchman|sendemail-validate)$/;

/** The first place the command's text names that an unresolved write could reach, or null. */
function mentionedProtected(source: string, context: GateContext): string | null {
  const m = PROTECTED_MENTION.exec(source);
  if (m) return m[0].replace(/^[^.\w]/, '');
  for (const dir of context.protectedDirs ?? []) if (source.includes(dir)) return dir;
  return null;
}

const show = (s: string): string => JSON.stringify(s.replace(/\u0000/g, '…'));

/**
 * Judge a write whose target the gate cannot resolve (`raw` holds {@link UNKNOWN} parts, or names
 * targets read from input) under the sandbox. `cwd` resolves a relative visible part; `source` is
 * the whole command line. @returns a deny finding, or null when the sandbox holds it.
 */
export function unresolvedWriteUnderSandbox(raw: string, cwd: string | null, source: string, context: GateContext): GateFinding | null {
  const deny = (rule: string, reason: string): GateFinding => ({ decision: 'deny', rule, reason });
  const mention = mentionedProtected(source, context);
  if (mention !== null)
    return deny(
      'blast_radius.protected_path',
      `the command mentions ${mention} and writes to ${show(raw)}, which the gate cannot resolve: the write could land there; write to a literal path`,
    );
  const last = raw.replace(/\/+$/, '').split('/').pop() ?? '';
  if (!last.includes(UNKNOWN) && PROTECTED_FILE.test(last.toLowerCase()))
    return deny('blast_radius.protected_path', `${show(raw)} is named like a git hook or an agent's settings file, in a directory the gate cannot resolve`);
  const cut = raw.indexOf(UNKNOWN);
  if (cut < 0) return null; // targets read from input (xargs, find -exec): the sandbox holds them
  const visible = raw.slice(0, cut);
  // a target that may be relative is relative to the cwd, which must then be the worktree (or a temp dir)
  if (!visible.startsWith('/') && !visible.startsWith('~') && (cwd === null || !(isUnder(cwd, context.worktree) || isTempPath(cwd, context))))
    return deny(
      cwd === null ? 'blast_radius.unresolved_path' : 'blast_radius.outside_worktree',
      `${show(raw)} may be relative to ${cwd ?? 'a directory the gate cannot resolve'}, outside the worktree ${context.worktree}: write to a literal path inside the worktree`,
    );
  if (visible === '') return null; // the directory itself is produced at run time: only the sandbox can hold it
  const slash = visible.lastIndexOf('/');
  const dir = resolvePath(slash < 0 ? '.' : visible.slice(0, slash) || '/', cwd, context.home);
  if (dir === null)
    return deny('blast_radius.unresolved_path', `write target ${show(raw)} is relative to a directory the gate cannot resolve; write to a literal path inside the worktree`);
  const prot = protectedReason(dir, context);
  if (prot !== null) return deny('blast_radius.protected_path', prot);
  if (isUnder(dir, context.worktree) || (isTempPath(dir, context) && !isUnder(dir, context.repoRoot))) return null;
  return deny(
    'blast_radius.outside_worktree',
    `${show(raw)} is under ${dir}, outside the worktree ${context.worktree}: a worker writes only inside its own worktree (or a temp dir)`,
  );
}

/**
 * True when a recursive delete of the unresolved `raw` (relative to `cwd`) can be left to the
 * sandbox because it is never `/`, `~`, `$HOME`, the worktree or a temp dir itself, whatever the
 * expansion holds: its last path segment is a literal name (`"$TMPDIR/cache"`, `"$dir"/*.log`), or
 * its visible directory lies strictly inside the worktree (`node_modules/.cache/"$name"`).
 * `"$X"`, `"$X/"`, `"$X"/*`, `"$X/.."`, `./"$X"` are not.
 */
export function deletableUnderSandbox(raw: string, cwd: string | null, context: GateContext): boolean {
  const last = raw.replace(/\/+$/, '').split('/').pop() ?? '';
  if (!last.includes(UNKNOWN) && last !== '.' && last !== '..' && /[^*?[\].]/.test(last)) return true;
  const visible = raw.slice(0, Math.max(0, raw.indexOf(UNKNOWN)));
  const slash = visible.lastIndexOf('/');
  if (slash < 0) return false;
  const dir = resolvePath(visible.slice(0, slash) || '/', cwd, context.home);
  return dir !== null && dir !== context.worktree && isUnder(dir, context.worktree) && protectedReason(dir, context) === null;
}

/**
 * Commands spelled in interpreter code: every string literal (quotes, backticks, Perl's `q(…)`,
 * `qq{…}`, `qx[…]`, Ruby's `%q(…)`, `%x{…}`), the literals of each innermost parenthesised argument
 * list joined by spaces (`run(["git", "push", "-f"])` → `git push -f`), and comma-separated
 * literal lists (`exec "rm", "-rf", "/"`). At most 64, each at most 2000 characters. Pure text;
 * never runs anything.
 */
export function embeddedCommands(code: string): string[] {
  const quoted = `'((?:[^'\\\\\\n]|\\\\.)*)'|"((?:[^"\\\\\\n]|\\\\.)*)"|\`((?:[^\`\\\\]|\\\\.)*)\``;
  const quoteLike = '(?:\\bq[qwx]?|%[qQwWx]?)\\s*(?:\\(([^()]*)\\)|\\{([^{}]*)\\}|\\[([^\\][]*)\\]|<([^<>]*)>|/([^/]*)/|\\|([^|]*)\\||!([^!]*)!)';
  const literal = new RegExp(`${quoteLike}|${quoted}`, 'g');
  const unquote = (s: string): string => s.replace(/\\(.)/g, '$1');
  const literals = (text: string): string[] => [...text.matchAll(literal)].map((m) => unquote(m.slice(1).find((g) => g !== undefined) ?? ''));
  const out = new Set<string>();
  for (const s of literals(code)) if (/\S/.test(s)) out.add(s.trim());
  for (const m of code.matchAll(/\(([^()]*)\)/g)) {
    const parts = literals(m[1] as string).filter((s) => /\S/.test(s));
    if (parts.length > 1) out.add(parts.join(' '));
  }
  for (const m of code.matchAll(new RegExp(`(?:${quoted})(?:\\s*,\\s*(?:${quoted}))+`, 'g'))) out.add(literals(m[0]).join(' '));
  return [...out].filter((s) => s.length <= 2000 && /^[\w./~$-]/.test(s)).slice(0, 64);
}
