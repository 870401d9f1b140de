/**
 * One gate request as an enforcement point sends it (the Claude Code / Codex hook, the pi
 * extension, the git/gh shim), and {@link answerGateRequest}: map it onto the gate's tools, decide
 * every call for the role, context and policy of the config the DECIDER holds, journal each
 * decision, and return the first non-allow.
 *
 * The same function runs in two places: inside the hook process when its config names no socket
 * (the Brain's own session, tests), and in the worker runner outside the sandbox
 * (./gate-server.ts) when it does. A request carries only what the harness reported (the tool call,
 * its cwd, the session id); role, task, context and policy never come from it.
 */
import { decisionEntry, type GateJournal } from '../decision-log.js';
import { decide } from '../decide.js';
import type { GateDecision, GateHarness, ToolRequest } from '../types.js';
import { mapClaudeTool, mapCodexTool, mapPiTool, pollyMcpDecision, type MappedResult } from './harness-tools.js';
import type { GateRuntimeConfig } from './hook-runtime.js';
import { shimCommandText } from './shim-fast-path.js';

/**
 * A request on the wire (one JSON line) or in process. `cwd` is the call's working directory as
 * the enforcement point saw it (absolute).
 * - `claude-code` / `codex`: the PreToolUse hook input's `tool_name`, `tool_input`, `session_id`;
 * - `pi`: pi's `tool_call` event `toolName` and `input`;
 * - `shim`: the argv after `git` / `gh`.
 */
export type GateWireRequest =
  | { v: 1; from: 'claude-code' | 'codex'; cwd: string; toolName: unknown; toolInput: unknown; session?: unknown }
  | { v: 1; from: 'pi'; cwd: string; toolName: unknown; toolInput: unknown }
  | { v: 1; from: 'shim'; cwd: string; prog: 'git' | 'gh'; args: string[] };

/** Fields Polly adds to every journaled decision of a worker (`task`, `worker`): never from the request. */
export type DecisionStamp = Record<string, string>;

const deny = (rule: string, reason: string): GateDecision => ({ decision: 'deny', rule, reason });

/**
 * Decide `request` for `cfg` (see the module doc), appending one `gate.decision` line per decided
 * call to `journal` (null: none) with `session` (hooks) and then `stamp`. A request that is not one
 * of {@link GateWireRequest}, or comes from a harness other than the config's (or the shim), is a
 * deny (rule `gate.bad_request`), journaled too. Never throws for bad input; a journal that cannot
 * be written throws (the caller fails closed).
 */
export function answerGateRequest(cfg: GateRuntimeConfig, request: unknown, journal: GateJournal | null, stamp: DecisionStamp = {}): GateDecision {
  const r = (request ?? {}) as Record<string, unknown>;
  const from = r.from;
  const cwd = typeof r.cwd === 'string' && r.cwd.startsWith('/') ? r.cwd : null;
  const record = (req: ToolRequest, d: GateDecision, extra: Record<string, unknown> = {}): GateDecision => {
    journal?.appendJournal('gate.decision', decisionEntry(req, d, { ...extra, ...stamp }));
    return d;
  };
  const bad = (why: string): GateDecision =>
    record(
      { type: 'tool', role: cfg.role, tool: 'bash', input: JSON.stringify(request ?? null).slice(0, 300), cwd: cwd ?? '/', harness: cfg.harness },
      deny('gate.bad_request', `the gate got a request it cannot check (${why}); nothing was run`),
    );
  if (r.v !== 1) return bad(`version ${JSON.stringify(r.v ?? null)}, expected 1`);
  if (!cwd) return bad(`cwd ${JSON.stringify(r.cwd ?? null)} is not an absolute path`);
  if (from !== 'shim' && from !== cfg.harness) return bad(`from ${JSON.stringify(from ?? null)}: this gate serves ${cfg.harness} and its shims`);
  let harness: GateHarness;
  let mapped: MappedResult;
  const extra: Record<string, unknown> = {};
  if (from === 'shim') {
    const args = r.args;
    if ((r.prog !== 'git' && r.prog !== 'gh') || !Array.isArray(args) || !args.every((a) => typeof a === 'string')) return bad('a shim request needs prog git|gh and string args');
    harness = 'shim';
    mapped = { ok: true, calls: [{ tool: 'bash', input: shimCommandText(r.prog, args as string[]) }] };
  } else {
    harness = from as GateHarness;
    if (from !== 'pi') extra.session = r.session ?? null;
    if (from === 'claude-code') {
      // The Brain's calls to Polly's own MCP server (workers get null here and are denied by the mapping).
      const mcp = pollyMcpDecision(cfg.role, r.toolName);
      if (mcp) return record({ type: 'tool', harness, role: cfg.role, tool: 'mcp', input: String(r.toolName), cwd } as unknown as ToolRequest, mcp, extra);
    }
    mapped = from === 'claude-code' ? mapClaudeTool(r.toolName, r.toolInput) : from === 'codex' ? mapCodexTool(r.toolName, r.toolInput) : mapPiTool(r.toolName, r.toolInput);
  }
  if (!mapped.ok) return deny('purpose_guard.unknown_tool', mapped.reason);
  let result: GateDecision = { decision: 'allow', rule: 'allow', reason: 'nothing to check' };
  for (const c of mapped.calls) {
    const req: ToolRequest = { type: 'tool', role: cfg.role, tool: c.tool, input: c.input, cwd, harness };
    const d = record(req, decide(req, cfg.policy, cfg.context), extra);
    if (d.decision !== 'allow') return d;
    result = d;
  }
  return result;
}

/** The text an enforcement point shows the agent for a non-allow decision. */
export function denialText(d: GateDecision): string {
  return `Polly gate: ${d.decision === 'ask' ? 'needs human approval, denied in a headless worker' : 'denied'} (${d.rule}): ${d.reason}`;
}
