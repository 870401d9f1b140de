/**
 * The `PreToolUse` command-hook protocol shared by Claude Code and Codex: JSON on stdin
 * (`{tool_name, tool_input, cwd, session_id, …}`), a deny as exactly
 * `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"…"}}`
 * on stdout (Codex 0.171 accepts no other keys), allow as no output, and any internal failure as
 * exit 2 with the reason on stderr (exit 2 blocks in both; other non-zero codes fail open in Claude).
 * Sources: code.claude.com/docs/en/hooks ("PreToolUse decision control"); codex-rs hooks
 * `pre-tool-use.command.output.schema.json`.
 */
import type { MappedResult } from './harness-tools.js';
import { decideAll, readStdin, type GateRuntimeConfig } from './hook-runtime.js';
import type { GateDecision, GateHarness } from '../types.js';

/** The fields of a PreToolUse input the gate reads. */
export interface PreToolUsePayload {
  tool_name?: unknown;
  tool_input?: unknown;
  cwd?: unknown;
  session_id?: unknown;
}

/**
 * Read and parse the hook input on stdin.
 * @throws Error when it is not a JSON object (the caller exits 2: fail closed).
 */
export async function readPreToolUsePayload(): Promise<{ payload: PreToolUsePayload; cwd: string }> {
  const raw = await readStdin();
  let payload: PreToolUsePayload;
  try {
    payload = JSON.parse(raw) as PreToolUsePayload;
  } catch {
    throw new Error(`hook input is not JSON: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (payload === null || typeof payload !== 'object') throw new Error('hook input is not a JSON object');
  return { payload, cwd: typeof payload.cwd === 'string' ? payload.cwd : process.cwd() };
}

/** Decide a mapped harness call (an unmappable call is a deny) and write the reply; allow writes nothing. */
export function answerPreToolUse(cfg: GateRuntimeConfig, harness: GateHarness, mapped: MappedResult, payload: PreToolUsePayload, cwd: string): void {
  const d: GateDecision = mapped.ok
    ? decideAll(
        cfg,
        mapped.calls.map((c) => ({ ...c, cwd, harness })),
        { session: payload.session_id ?? null },
      )
    : { decision: 'deny', rule: 'purpose_guard.unknown_tool', reason: mapped.reason };
  if (d.decision === 'allow') return;
  const reason = `Polly gate: ${d.decision === 'ask' ? 'needs human approval, denied in a headless worker' : 'denied'} (${d.rule}): ${d.reason}`;
  process.stdout.write(`${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } })}\n`);
}

/** Run a hook's main; a fault blocks the call (exit 2, reason on stderr). */
export function runPreToolUseHook(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(`Polly gate failed and blocks this call (fail closed): ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 2;
  });
}
