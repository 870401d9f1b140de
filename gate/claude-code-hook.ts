#!/usr/bin/env node
/**
 * Claude Code `PreToolUse` command hook: `node claude-code-hook.js <gate-config.json>`.
 *
 * Reads the hook input on stdin (`{hook_event_name: "PreToolUse", tool_name, tool_input, cwd, …}`)
 * and answers per the Claude Code hooks reference (code.claude.com/docs/en/hooks, "PreToolUse
 * decision control"):
 * - deny (and ask: workers are headless) → exit 0 with
 *   `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"…"}}`;
 * - allow → exit 0 with no output (Claude's own permission rules still apply);
 * - any internal failure → exit 2 with the reason on stderr (exit 2 blocks the call; other non-zero
 *   codes would fail open).
 */
import { createFileJournal, decisionEntry } from './decision-log.js';
import { decideAll, readGateConfig, readStdin } from './hook-runtime.js';
import { mapClaudeTool, pollyMcpDecision } from './harness-tools.js';
import type { GateRequest } from './types.js';

async function main(): Promise<void> {
  const cfg = readGateConfig(process.argv[2]);
  const raw = await readStdin();
  let payload: { tool_name?: unknown; tool_input?: unknown; cwd?: unknown; hook_event_name?: unknown; session_id?: unknown };
  try {
    payload = JSON.parse(raw) as typeof payload;
  } catch {
    throw new Error(`hook input is not JSON: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (payload === null || typeof payload !== 'object') throw new Error('hook input is not a JSON object');
  const cwd = typeof payload.cwd === 'string' ? payload.cwd : process.cwd();
  // The Brain's calls to Polly's own MCP server (workers get null here and are denied below).
  const mcp = pollyMcpDecision(cfg.role, payload.tool_name);
  if (mcp) {
    const request = { type: 'tool', harness: 'claude-code', role: cfg.role, tool: 'mcp', input: String(payload.tool_name), cwd } as unknown as GateRequest;
    if (cfg.journalPath) createFileJournal(cfg.journalPath).appendJournal('gate.decision', decisionEntry(request, mcp, { session: payload.session_id ?? null }));
    return;
  }
  const mapped = mapClaudeTool(payload.tool_name, payload.tool_input);
  const d = mapped.ok
    ? decideAll(cfg, mapped.calls.map((c) => ({ ...c, cwd, harness: 'claude-code' as const })), { session: payload.session_id ?? null })
    : { decision: 'deny' as const, rule: 'purpose_guard.unknown_tool', reason: mapped.reason };
  if (d.decision === 'allow') return;
  const reason = `Polly gate: ${d.decision === 'ask' ? 'needs human approval, denied in a headless worker' : 'denied'} (${d.rule}): ${d.reason}`;
  process.stdout.write(`${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`Polly gate failed and blocks this call (fail closed): ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
});
