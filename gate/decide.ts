/**
 * The gate's one pure function: `decide(request, policy, context) → {decision, rule, reason}`.
 *
 * Rules are named `<policy>.<sub-rule>`, after the config's policy keys:
 * - `blast_radius.*` — force_push, push_default_branch, delete_remote_branch, gate_pushes (ask),
 *   reset_hard, clean, branch_delete, discard, history, worktree, rm, merge, repo, git_config,
 *   protected_path, outside_worktree, unresolved_path, unresolved_command, hidden_command,
 *   interpreter, parse_error, default_branch (moving or switching to the default branch locally:
 *   update-ref, branch -f, checkout -B, fetch/pull refspecs, symbolic-ref …), other_repository (a
 *   git write whose cwd, -C, --git-dir or --work-tree is outside the worktree), push_other_branch
 *   (a push refspec, or --tags, naming anything but the task's own branch), forge_write (any gh
 *   subcommand outside the forge reads, a gh api call that writes, or an HTTP client writing to a
 *   forge API: a worker makes no forge writes, Polly does them), credentials (`gh auth token`);
 * - `spawn_bounds.max_dispatches_per_turn`;
 * - `purpose_guard.*` — unknown_purpose, plan_gate (work that is not read-only, dispatched other
 *   than from an approved plan), read_only (any change, and any inline interpreter code: `node -e`,
 *   `python -c`, `bash -c`, a heredoc fed to an interpreter, `eval`), brain, unknown_role, unknown_tool;
 * - `ask_timeout.expired` (see {@link resolveAsk});
 * - `allow` when nothing fired, `internal_error` when the gate itself failed (always a deny).
 * Fail closed: anything the gate cannot resolve, and any exception, is a deny; except that an
 * implementer inside Polly's sandbox (`context.sandboxed`) has what the gate cannot see left to the
 * sandbox, the seed's named policies staying denied in every spelling (./sandbox-leeway.ts).
 */
import { isReadOnlyRole } from '../brain/core/vocabulary.js';
import { resolvePath } from './paths.js';
import { checkWrite } from './policy.js';
import { analyzeShell } from './shell/shell-analysis.js';
import type { DispatchRequest, ForgeRequest, GateContext, GateDecision, GatePolicy, GateRequest, ToolRequest } from './types.js';

export type { GateContext, GateDecision, GatePolicy, GateRequest } from './types.js';

const ROLES = new Set(['brain', 'implement', 'review', 'explore', 'search']);
const TOOLS = new Set(['bash', 'write', 'edit', 'read']);

/**
 * Decide one request. Total: never throws; an internal failure is `{decision:'deny', rule:'internal_error'}`.
 * @param request  a dispatch, a tool call or a forge call (see types.ts)
 * @param policy   the `policies` section of `.polly/config.yaml` (brain/config-schema.ts)
 * @param context  repo root, worktree, branch, default branch, home (absolute paths); `sandboxed` when
 *   the worker runs inside Polly's sandbox
 */
export function decide(request: GateRequest, policy: GatePolicy, context: GateContext): GateDecision {
  try {
    return decideUnsafe(request, policy, context);
  } catch (error) {
    return { decision: 'deny', rule: 'internal_error', reason: `the gate failed and denies by default: ${error instanceof Error ? error.message : String(error)}` };
  }
}

function decideUnsafe(request: GateRequest, policy: GatePolicy, context: GateContext): GateDecision {
  if (request === null || typeof request !== 'object') throw new Error('request is not an object');
  for (const k of ['repoRoot', 'worktree', 'branch', 'defaultBranch', 'home'] as const) {
    if (typeof context?.[k] !== 'string' || context[k] === '') throw new Error(`context.${k} is missing`);
  }
  if (
    typeof policy?.blast_radius?.gate_pushes !== 'boolean' ||
    !Number.isInteger(policy.spawn_bounds?.max_dispatches_per_turn) ||
    !Array.isArray(policy.purpose_guard?.allowed) ||
    !Array.isArray(policy.purpose_guard?.read_only) ||
    typeof policy.ask_timeout !== 'number'
  ) {
    throw new Error('the policy is not a valid `policies` section (blast_radius, spawn_bounds, purpose_guard, ask_timeout)');
  }
  switch (request.type) {
    case 'dispatch':
      return decideDispatch(request, policy);
    case 'tool':
      return decideTool(request, policy, context);
    case 'forge':
      return decideForge(request, policy);
    default:
      return { decision: 'deny', rule: 'purpose_guard.unknown_request', reason: `unknown request type ${JSON.stringify((request as { type?: unknown }).type)}` };
  }
}

function decideDispatch(r: DispatchRequest, policy: GatePolicy): GateDecision {
  const allowed = policy.purpose_guard.allowed as string[];
  if (!allowed.includes(r.purpose)) {
    return { decision: 'deny', rule: 'purpose_guard.unknown_purpose', reason: `purpose ${JSON.stringify(r.purpose)} is not one of ${allowed.join(', ')}` };
  }
  if (r.source !== 'plan' && !(policy.purpose_guard.read_only as string[]).includes(r.purpose)) {
    return {
      decision: 'deny',
      rule: 'purpose_guard.plan_gate',
      reason: `${r.purpose} work is dispatched by Polly from an approved plan; propose the work with plan_propose and wait for approval`,
    };
  }
  const max = policy.spawn_bounds.max_dispatches_per_turn;
  if (!Number.isInteger(r.dispatchesThisTurn) || r.dispatchesThisTurn < 0)
    throw new Error(`dispatchesThisTurn must be a non-negative integer, got ${JSON.stringify(r.dispatchesThisTurn)}`);
  if (r.dispatchesThisTurn >= max) {
    return { decision: 'deny', rule: 'spawn_bounds.max_dispatches_per_turn', reason: `${r.dispatchesThisTurn} dispatches already this turn; at most ${max} per turn` };
  }
  return { decision: 'allow', rule: 'allow', reason: `dispatch ${r.purpose}${r.model ? ` on ${r.model}` : ''} (${r.dispatchesThisTurn + 1} of ${max} this turn)` };
}

const FORGE_ALLOWED = new Set(['open_pr', 'open_draft_pr', 'mark_ready', 'comment', 'post_review', 'review', 'read_pr', 'get_pr', 'list_prs', 'update_pr']);

function decideForge(r: ForgeRequest, policy: GatePolicy): GateDecision {
  const op = String(r.operation ?? '');
  if (/merge/i.test(op)) return { decision: 'deny', rule: 'blast_radius.merge', reason: `forge operation ${op}: Polly never merges; a human merges` };
  if (!FORGE_ALLOWED.has(op)) return { decision: 'deny', rule: 'purpose_guard.unknown_forge_operation', reason: `unknown forge operation ${JSON.stringify(op)}` };
  const ro = r.role !== undefined && isReadOnlyRole(r.role, policy.purpose_guard.read_only);
  if (ro && op !== 'read_pr' && op !== 'get_pr' && op !== 'list_prs' && op !== 'post_review' && op !== 'review' && op !== 'comment') {
    return { decision: 'deny', rule: 'purpose_guard.read_only', reason: `the ${r.role} role may not ${op}` };
  }
  return { decision: 'allow', rule: 'allow', reason: `forge ${op}` };
}

function decideTool(r: ToolRequest, policy: GatePolicy, context: GateContext): GateDecision {
  if (!ROLES.has(r.role)) return { decision: 'deny', rule: 'purpose_guard.unknown_role', reason: `unknown role ${JSON.stringify(r.role)}` };
  if (!TOOLS.has(r.tool)) return { decision: 'deny', rule: 'purpose_guard.unknown_tool', reason: `unknown tool ${JSON.stringify(r.tool)}` };
  if (typeof r.input !== 'string') throw new Error('input must be a string');
  const cwd = typeof r.cwd === 'string' && r.cwd.startsWith('/') ? r.cwd : context.worktree;
  if (r.tool === 'read') return { decision: 'allow', rule: 'allow', reason: 'reads are allowed' };
  if (r.tool === 'write' || r.tool === 'edit') {
    const path = resolvePath(r.input, cwd, context.home);
    const f = checkWrite(path, r.input, r.role, context, policy);
    return f ?? { decision: 'allow', rule: 'allow', reason: `${r.tool} ${path}` };
  }
  const report = analyzeShell(r.input, cwd, r.role, context, policy);
  const firstDeny = report.findings.find((f) => f.decision === 'deny');
  if (firstDeny) return { decision: 'deny', rule: firstDeny.rule, reason: firstDeny.reason };
  for (const w of report.writes) {
    const f = checkWrite(w.path, w.raw, r.role, context, policy, { cwd: w.cwd, source: r.input });
    if (f) return { decision: f.decision, rule: f.rule, reason: f.reason };
  }
  if (report.mutations.length > 0 && (r.role === 'brain' || isReadOnlyRole(r.role, policy.purpose_guard.read_only))) {
    const what = report.mutations[0] as string;
    return r.role === 'brain'
      ? { decision: 'deny', rule: 'purpose_guard.brain', reason: `the Brain does not run commands that change things (${what}); dispatch a worker` }
      : { decision: 'deny', rule: 'purpose_guard.read_only', reason: `the ${r.role} role is read-only: ${what} changes things` };
  }
  const ask = report.findings.find((f) => f.decision === 'ask');
  if (ask) return { decision: 'ask', rule: ask.rule, reason: ask.reason };
  return { decision: 'allow', rule: 'allow', reason: 'no rule denies this command' };
}

/**
 * Apply `ask_timeout` to an ask: once `askedAt + ask_timeout` has passed, the ask is a deny.
 * @param askedAt  ISO time of the ask; @param now ISO time (passed in: the gate reads no clock)
 */
export function resolveAsk(decision: GateDecision, askedAt: string, now: string, policy: GatePolicy): GateDecision {
  if (decision.decision !== 'ask') return decision;
  const elapsed = (Date.parse(now) - Date.parse(askedAt)) / 1000;
  if (!Number.isFinite(elapsed) || elapsed > policy.ask_timeout) {
    return { decision: 'deny', rule: 'ask_timeout.expired', reason: `the ask (${decision.rule}) expired after ${policy.ask_timeout} s without an answer` };
  }
  return decision;
}
