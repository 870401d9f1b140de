/**
 * The `PreToolUse` command-hook protocol shared by Claude Code and Codex: JSON on stdin
 * (`{tool_name, tool_input, cwd, session_id, …}`), a deny as exactly
 * `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"…"}}`
 * on stdout (Codex 0.171 accepts no other keys), allow as no output, and any internal failure as
 * exit 2 with the reason on stderr (exit 2 blocks in both; other non-zero codes fail open in Claude).
 * Sources: code.claude.com/docs/en/hooks ("PreToolUse decision control"); codex-rs hooks
 * `pre-tool-use.command.output.schema.json`.
 */
import { askGate } from './gate-client.js';
import { denialText } from './gate-request.js';
import { readStdin, type GateRuntimeConfig } from './hook-runtime.js';

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

/**
 * Ask the gate about a PreToolUse call (./gate-client.ts: the runner's socket, or in process) and
 * write the reply; allow writes nothing, ask and deny write the deny JSON.
 */
export async function answerPreToolUse(cfg: GateRuntimeConfig, harness: 'claude-code' | 'codex', payload: PreToolUsePayload, cwd: string): Promise<void> {
  const d = await askGate(cfg, { v: 1, from: harness, cwd, toolName: payload.tool_name, toolInput: payload.tool_input, session: payload.session_id ?? null });
  if (d.decision === 'allow') return;
  process.stdout.write(`${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: denialText(d) } })}\n`);
}

/** Run a hook's main; a fault blocks the call (exit 2, reason on stderr). */
export function runPreToolUseHook(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(`Polly gate failed and blocks this call (fail closed): ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 2;
  });
}
