/**
 * Tools a read-only worker (a reviewer) asked for that its role was not given, read from the
 * turn's own event stream (`tool_call` events, as the adapter normalised them), never from the
 * agent's words. The role's tools per harness: workers/agents/role-tools.ts.
 *
 * Why this is needed beside the sandbox's EROFS lines (./sandbox-refusals.ts) and the gate's log
 * (./gate-attempts.ts): a pi reviewer has no shell at all, so its `bash` calls come back "Tool bash
 * not found" and never reach the gate or the OS; a claude reviewer's `Write` comes back "No such
 * tool available". Nothing happened, but the reviewer tried something outside its role, and the
 * run must not end `ready` as if it had not.
 */
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import { visibleText } from '../core/visible-text.js';

/**
 * The calls in `events` of a tool outside `allowed`, each `<tool> <arguments as JSON>` (JSON shows
 * C0 controls as `\u00NN`, and the rest are shown as `\xNN`; ≤ 200 characters, distinct, at most
 * `max`). The first call of each distinct tool comes first, so a turn of many shell calls still
 * names its write. Pure.
 */
export function toolAttempts(events: readonly AgentEvent[], allowed: ReadonlySet<string>, max = 5): string[] {
  const firsts: string[] = [];
  const rest: string[] = [];
  const seenTools = new Set<string>();
  for (const e of events) {
    if (e.type !== 'tool_call' || allowed.has(e.tool)) continue;
    let args: string;
    try {
      args = JSON.stringify(e.input) ?? '';
    } catch {
      args = String(e.input);
    }
    const l = visibleText(`${e.tool} ${args}`.replace(/\s+/g, ' ')).slice(0, 200);
    if (firsts.includes(l) || rest.includes(l)) continue;
    if (seenTools.has(e.tool)) rest.push(l);
    else {
      seenTools.add(e.tool);
      firsts.push(l);
    }
  }
  return [...firsts, ...rest].slice(0, max);
}

/** The task's reason for tool calls outside the read-only role during `step`. */
export function toolAttemptReason(step: string, attempts: readonly string[]): string {
  return `the reviewer called tools its read-only role does not have during ${step}: ${attempts.join(' | ')}`;
}
