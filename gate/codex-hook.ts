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
import { decideAll, readGateConfig, readStdin } from './hook-runtime.js';
import { mapCodexTool } from './harness-tools.js';

async function main(): Promise<void> {
  const cfg = readGateConfig(process.argv[2]);
  const raw = await readStdin();
  let payload: { tool_name?: unknown; tool_input?: unknown; cwd?: unknown; session_id?: unknown };
  try {
    payload = JSON.parse(raw) as typeof payload;
  } catch {
    throw new Error(`hook input is not JSON: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (payload === null || typeof payload !== 'object') throw new Error('hook input is not a JSON object');
  const cwd = typeof payload.cwd === 'string' ? payload.cwd : process.cwd();
  const mapped = mapCodexTool(payload.tool_name, payload.tool_input);
  const d = mapped.ok
    ? decideAll(cfg, mapped.calls.map((c) => ({ ...c, cwd, harness: 'codex' as const })), { session: payload.session_id ?? null })
    : { decision: 'deny' as const, rule: 'purpose_guard.unknown_tool', reason: mapped.reason };
  if (d.decision === 'allow') return;
  const reason = `Polly gate: ${d.decision === 'ask' ? 'needs human approval, denied in a headless worker' : 'denied'} (${d.rule}): ${d.reason}`;
  process.stdout.write(`${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`Polly gate failed and blocks this call (fail closed): ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
});
