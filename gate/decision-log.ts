/**
 * The gate's decision log. Every decision is journaled through the narrow {@link GateJournal}
 * interface (`appendJournal(kind, data)`), so the Brain can route it into the registry's journal.
 *
 * Gate decisions go to `.polly/gate-decisions.jsonl`: one JSON line `{at, kind: 'gate.decision',
 * data}` per decision, without `seq`, appended with O_APPEND in a single write kept under 4 KiB
 * (atomic on POSIX for regular files). Only Polly's processes write it: for a worker, the worker
 * runner outside the sandbox (hooks/gate-server.ts; its lines carry `task` and `worker`), never a
 * hook inside; the Brain's hooks and `polly gate decide` append directly. `polly gate log` merges
 * this file with `gate.decision` entries of `.polly/journal.jsonl` by time. See docs/gate-decisions.md.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { redactSecrets } from '../brain/core/redact.js';
import type { GateDecision, GateRequest } from './types.js';

/** Where decisions go: `appendJournal('gate.decision', data)`. */
export interface GateJournal {
  appendJournal(kind: string, data: Record<string, unknown>): void;
}

/** The file a repository's gate decisions are appended to, relative to the repo root. */
export const GATE_DECISIONS_FILE = '.polly/gate-decisions.jsonl';

const MAX_LINE = 4000;

/** Remove secret-shaped tokens and credential values from text before it is logged or printed (brain/core/redact.ts). */
export function redact(text: string): string {
  return redactSecrets(text);
}

/** The data of one `gate.decision` entry (input truncated and redacted). */
export function decisionEntry(request: GateRequest, decision: GateDecision, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const r = request as unknown as Record<string, unknown>;
  const input = typeof r.input === 'string' ? redact(r.input).slice(0, 1500) : undefined;
  return {
    type: r.type,
    ...(r.harness !== undefined ? { harness: r.harness } : {}),
    ...(r.role !== undefined ? { role: r.role } : {}),
    ...(r.tool !== undefined ? { tool: r.tool } : {}),
    ...(input !== undefined ? { input } : {}),
    ...(r.cwd !== undefined ? { cwd: r.cwd } : {}),
    ...(r.purpose !== undefined ? { purpose: r.purpose, model: r.model, dispatchesThisTurn: r.dispatchesThisTurn } : {}),
    ...(r.operation !== undefined ? { operation: r.operation } : {}),
    decision: decision.decision,
    rule: decision.rule,
    reason: redact(decision.reason).slice(0, 1000),
    ...extra,
  };
}

/**
 * A journal that appends `{at, kind, data}` lines to `path` with one O_APPEND write each.
 * Errors propagate (a hook turns them into a fail-closed exit).
 */
export function createFileJournal(path: string, clock: () => Date = () => new Date()): GateJournal {
  return {
    appendJournal(kind, data) {
      let line = JSON.stringify({ at: clock().toISOString(), kind, data });
      if (Buffer.byteLength(line) > MAX_LINE) {
        line = JSON.stringify({
          at: clock().toISOString(),
          kind,
          data: { ...data, input: String(data.input ?? '').slice(0, 300), reason: String(data.reason ?? '').slice(0, 300), truncated: true },
        });
      }
      const fd = openSync(path, 'a', 0o600);
      try {
        writeSync(fd, `${line}\n`);
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** An in-memory journal (tests). */
export function createMemoryJournal(): GateJournal & { entries: Array<{ kind: string; data: Record<string, unknown> }> } {
  const entries: Array<{ kind: string; data: Record<string, unknown> }> = [];
  return { entries, appendJournal: (kind, data) => void entries.push({ kind, data }) };
}
