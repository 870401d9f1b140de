#!/usr/bin/env node
/**
 * Codex `PreToolUse` command hook: `node codex-hook.js <gate-config.json>`.
 *
 * Input on stdin: `{hook_event_name: "PreToolUse", tool_name, tool_input, cwd, session_id, turn_id, …}`
 * (shell calls as `Bash` with `tool_input.command`; `apply_patch` with the patch text in
 * `tool_input.command`). Reply, per Codex's strict PreToolUse output schema
 * (codex-rs hooks `pre-tool-use.command.output.schema.json`: additionalProperties false; Codex
 * 0.171 rejects `allow`/`ask` decisions, `continue:false`, `suppressOutput`, and a deny without a
 * non-empty `permissionDecisionReason`):
 * - deny (and ask) → exit 0, stdout exactly
 *   `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"…"}}`;
 * - allow → exit 0, no output;
 * - internal failure → exit 2 with the reason on stderr (Codex blocks on exit 2 with a stderr reason).
 */
import { readGateConfig } from './hook-runtime.js';
import { answerPreToolUse, readPreToolUsePayload, runPreToolUseHook } from './pre-tool-use.js';

runPreToolUseHook(async () => {
  const cfg = readGateConfig(process.argv[2]);
  const { payload, cwd } = await readPreToolUsePayload();
  await answerPreToolUse(cfg, 'codex', payload, cwd);
});
