/**
 * Role policy: who may write where. Pure.
 *
 * - read-only roles (`purpose_guard.read_only`, default: review, explore, search) write nowhere;
 * - the Brain writes only docs (`docs/`, `doc/`, `*.md`, `*.mdx`, `*.rst`), skills (a `skills/`
 *   directory) and plans (`.polly/plans/`) inside the repository, plus scratch files in temp dirs;
 * - an implementer writes inside its worktree and temp dirs;
 * - nobody writes protected locations (`.git/`, hook dirs, `.claude/`, `.codex/`, `.pi/`, `.polly/`,
 *   the gate's state dir) — rule `blast_radius.protected_path`.
 */
import { isReadOnlyRole } from '../brain/core/vocabulary.js';
import { isHarmlessDevice, isTempPath, isUnder, protectedReason } from './paths.js';
import { sandboxHolds, unresolvedWriteUnderSandbox } from './sandbox-leeway.js';
import type { Analyzer, GateContext, GatePolicy, GateRole } from './types.js';

export interface Finding {
  decision: 'deny' | 'ask';
  rule: string;
  reason: string;
}

/** True when the role may not change anything: brain/core/vocabulary.ts `isReadOnlyRole` under the policy's `purpose_guard.read_only`. */
function readOnlyRole(role: GateRole, policy: GatePolicy): boolean {
  return isReadOnlyRole(role, policy.purpose_guard.read_only);
}

/**
 * Read-only roles: any inline interpreter code (`node -e`, `python -c`, `bash -c '…'`, a heredoc fed
 * to an interpreter, `eval`) counts as a change, because the gate cannot prove code only reads.
 * Reports a `purpose_guard.read_only` deny naming `what` and returns true for a read-only role;
 * returns false (and reports nothing) otherwise.
 */
export function denyInlineCodeForReadOnly(a: Pick<Analyzer, 'role' | 'policy' | 'finding'>, what: string): boolean {
  if (!readOnlyRole(a.role, a.policy)) return false;
  a.finding({
    decision: 'deny',
    rule: 'purpose_guard.read_only',
    reason: `the ${a.role} role is read-only, and inline code (${what}) counts as a change: the gate cannot prove code only reads. Read with cat, grep, rg, jq, sed -n or git log/show/diff instead`,
  });
  return true;
}

function isBrainWritable(path: string, context: GateContext): boolean {
  const roots = [context.repoRoot, context.worktree];
  const root = roots.find((r) => isUnder(path, r));
  if (root === undefined) return false;
  const rel = path.slice(root.length).replace(/^\//, '');
  if (rel.startsWith('.polly/plans/')) return true;
  if (protectedReason(path, context) !== null) return false;
  const segs = rel.split('/');
  if (segs.slice(0, -1).some((s) => s === 'docs' || s === 'doc' || s === 'skills')) return true;
  return /\.(md|mdx|markdown|rst)$/i.test(rel);
}

/**
 * Decide a write (or deletion) of `path` by `role`.
 * @param path  absolute normalised path, or null when the target could not be resolved statically.
 * @param raw   the target as written (for messages and for segment checks when unresolved).
 * @param where for a shell command: the directory a relative `raw` is relative to and the whole
 *   command line; with them an unresolved target under the sandbox is judged by
 *   ./sandbox-leeway.ts (without them, or unconfined, it is denied).
 * @returns a deny finding, or null when the write is allowed.
 */
export function checkWrite(
  path: string | null,
  raw: string,
  role: GateRole,
  context: GateContext,
  policy: GatePolicy,
  where?: { cwd: string | null; source: string },
): Finding | null {
  const shown = JSON.stringify(raw.replace(/\u0000/g, '…'));
  if (path !== null && isHarmlessDevice(path)) return null;
  if (readOnlyRole(role, policy)) {
    return { decision: 'deny', rule: 'purpose_guard.read_only', reason: `the ${role} role is read-only: it may not write ${shown}` };
  }
  if (path === null) {
    const p = protectedReason(raw, context);
    if (p) return { decision: 'deny', rule: 'blast_radius.protected_path', reason: p };
    if (where !== undefined && sandboxHolds(role, context)) return unresolvedWriteUnderSandbox(raw, where.cwd, where.source, context);
    return {
      decision: 'deny',
      rule: 'blast_radius.unresolved_path',
      reason: `write target ${shown} cannot be resolved before it runs (an expansion or unknown directory); write to a literal path inside the worktree`,
    };
  }
  if (role === 'brain') {
    if (path.startsWith('/') && isBrainWritable(path, context)) return null;
    if (isTempPath(path, context) && !isUnder(path, context.repoRoot) && protectedReason(path, context) === null) return null;
    return { decision: 'deny', rule: 'purpose_guard.brain', reason: `the Brain writes only docs, skills and .polly/plans, never source: ${path}` };
  }
  const prot = protectedReason(path, context);
  if (prot) return { decision: 'deny', rule: 'blast_radius.protected_path', reason: prot };
  if (isUnder(path, context.worktree)) return null;
  // a temp dir is scratch space, unless the repository itself lives there (tests, CI)
  if (isTempPath(path, context) && !isUnder(path, context.repoRoot)) return null;
  return {
    decision: 'deny',
    rule: 'blast_radius.outside_worktree',
    reason: `${path} is outside the worktree ${context.worktree}: a worker writes only inside its own worktree (or a temp dir)`,
  };
}
