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
import { createFileJournal, decisionEntry } from '../decision-log.js';
import { readGateConfig } from './hook-runtime.js';
import { mapClaudeTool, pollyMcpDecision } from './harness-tools.js';
import { answerPreToolUse, readPreToolUsePayload, runPreToolUseHook } from './pre-tool-use.js';
import type { GateRequest } from '../types.js';

runPreToolUseHook(async () => {
  const cfg = readGateConfig(process.argv[2]);
  const { payload, cwd } = await readPreToolUsePayload();
  // The Brain's calls to Polly's own MCP server (workers get null here and are denied below).
  const mcp = pollyMcpDecision(cfg.role, payload.tool_name);
  if (mcp) {
    const request = { type: 'tool', harness: 'claude-code', role: cfg.role, tool: 'mcp', input: String(payload.tool_name), cwd } as unknown as GateRequest;
    if (cfg.journalPath) createFileJournal(cfg.journalPath).appendJournal('gate.decision', decisionEntry(request, mcp, { session: payload.session_id ?? null }));
    return;
  }
  answerPreToolUse(cfg, 'claude-code', mapClaudeTool(payload.tool_name, payload.tool_input), payload, cwd);
});
