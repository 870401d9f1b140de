/**
 * Codex's own record of a session: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`,
 * one JSON line per item, `{timestamp, type: "response_item", payload}` where `payload` is a
 * Responses-API item (`function_call {name, arguments, call_id}`, `custom_tool_call {name, input,
 * call_id}`, `function_call_output {call_id, output}`, …). Observed with codex 0.171.0 in this
 * repository's tests (test/confinement/reviewer-attacks.test.ts keeps one with POLLY_ATTACK_KEEP=1).
 *
 * Why Polly reads it: codex's `--json` stream has no item for a call of a tool it does not declare
 * (its answer to the model, "unsupported call: <name>", is only here), so without it a codex
 * reviewer that asks for `write_file` looks like one that asked for nothing.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentEvent } from './agent-adapter.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The rollout file of thread `threadId` under `codexHome`, or null (searched newest day first). */
export function findRolloutFile(codexHome: string, threadId: string): string | null {
  if (!/^[\w-]+$/.test(threadId)) return null;
  const walk = (dir: string, depth: number): string | null => {
    let names: string[];
    try {
      names = readdirSync(dir).sort().reverse();
    } catch {
      return null;
    }
    for (const name of names) {
      if (depth === 3) {
        if (name.startsWith('rollout-') && name.endsWith(`-${threadId}.jsonl`)) return join(dir, name);
      } else {
        const found = walk(join(dir, name), depth + 1);
        if (found) return found;
      }
    }
    return null;
  };
  return walk(join(codexHome, 'sessions'), 0);
}

/**
 * The calls of undeclared tools in a rollout's text at or after `since` (ISO-8601), as a `tool_call`
 * (the name and the parsed arguments) and a `tool_result` (`isError`, codex's answer) each. Pure;
 * malformed lines are skipped.
 */
export function undeclaredToolCalls(rollout: string, since: string): AgentEvent[] {
  const calls = new Map<string, { name: string; input: unknown }>();
  const out: AgentEvent[] = [];
  for (const line of rollout.split('\n')) {
    let item: Json;
    try {
      item = JSON.parse(line) as Json;
    } catch {
      continue;
    }
    if (typeof item.timestamp !== 'string' || item.timestamp < since || !isObject(item.payload)) continue;
    const p = item.payload;
    const callId = typeof p.call_id === 'string' ? p.call_id : null;
    if (!callId) continue;
    if ((p.type === 'function_call' || p.type === 'custom_tool_call') && typeof p.name === 'string') {
      let input: unknown = p.type === 'custom_tool_call' ? p.input : p.arguments;
      if (typeof input === 'string' && p.type === 'function_call') {
        try {
          input = JSON.parse(input);
        } catch {
          // keep the text
        }
      }
      calls.set(callId, { name: p.name, input });
    } else if ((p.type === 'function_call_output' || p.type === 'custom_tool_call_output') && typeof p.output === 'string' && p.output.startsWith('unsupported call')) {
      const call = calls.get(callId);
      if (!call) continue;
      out.push({ type: 'tool_call', id: callId, tool: call.name, input: call.input }, { type: 'tool_result', id: callId, isError: true, output: p.output });
    }
  }
  return out;
}
