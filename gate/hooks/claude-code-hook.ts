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
 * The decision comes from ./gate-client.ts `askGate` (a worker's: the runner, over its socket).
 */
import { readGateConfig } from './hook-runtime.js';
import { answerPreToolUse, readPreToolUsePayload, runPreToolUseHook } from './pre-tool-use.js';

runPreToolUseHook(async () => {
  const cfg = readGateConfig(process.argv[2]);
  const { payload, cwd } = await readPreToolUsePayload();
  // Polly's own MCP tools (the Brain's) are decided with the rest (./gate-request.ts).
  await answerPreToolUse(cfg, 'claude-code', payload, cwd);
});
