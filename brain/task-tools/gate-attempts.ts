/**
 * What a read-only worker (a reviewer) tried that the gate refused as an attempt on one of Polly's
 * promises, read from the gate's own decision log (gate/decision-log.ts: `.polly/gate-decisions.jsonl`,
 * one `{at, kind: 'gate.decision', data}` line per decision, `data.cwd` the call's working directory),
 * never from the agent's words.
 *
 * The lines of one review turn are those appended after the turn started that the worker runner
 * stamped with the turn's worker id (`worker`: the socket the request came in on,
 * gate/hooks/gate-server.ts), whatever `cwd` they name; unstamped lines (older Polly) count when
 * their `cwd` is the reviewer's own scratch dir (a fresh `mkdtemp` per round). What counts as an attempt:
 * a `deny` (or an `ask`, which a headless worker is denied) under a `blast_radius.*` rule: a merge,
 * a push, a forge write, a credential read, a write outside its dir, a ref or history change.
 * A `purpose_guard.read_only` denial alone (a reviewer that tried `npm test`) is the gate explaining
 * the role, not an attempt: it does not fail the task.
 *
 * Why this is needed beside the sandbox's EROFS lines (./sandbox-refusals.ts): a command the gate
 * refuses never reaches the OS, so it leaves no refusal to read, and the run would end `ready`
 * after a reviewer tried to merge. The log is written by the runner outside the sandbox only: no
 * reviewer can truncate it (which would hide its lines from the mark on) or add to it.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { visibleText } from '../core/visible-text.js';

/** The size of the decision log now, in bytes (0 when it does not exist): where a turn's lines start. */
export function decisionLogMark(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The attempts (`<rule>: <command or path>`, ≤ 200 characters each, at most `max`) logged in `path`
 * from byte `mark` on by this turn: lines stamped `worker: worker` when `worker` is given, and
 * unstamped lines whose cwd is inside `cwd`. Malformed lines are skipped.
 */
export function gateAttempts(path: string, mark: number, cwd: string, max = 5, worker: string | null = null): string[] {
  let text = '';
  try {
    const fd = openSync(path, 'r');
    try {
      const size = statSync(path).size;
      if (size <= mark) return [];
      const buf = Buffer.alloc(Math.min(size - mark, 4 * 1024 * 1024));
      const n = readSync(fd, buf, 0, buf.length, mark);
      text = buf.subarray(0, n).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n')) {
    let data: Record<string, unknown>;
    try {
      data = (JSON.parse(line) as { data?: Record<string, unknown> }).data ?? {};
    } catch {
      continue;
    }
    const rule = String(data.rule ?? '');
    if (data.decision === 'allow' || !rule.startsWith('blast_radius.')) continue;
    if (typeof data.worker === 'string' && worker !== null) {
      if (data.worker !== worker) continue;
    } else if (typeof data.cwd !== 'string' || !inside(data.cwd, cwd)) continue;
    const l = visibleText(`${rule}: ${String(data.input ?? '').replace(/\s+/g, ' ')}`).slice(0, 200);
    if (!out.includes(l)) out.push(l);
    if (out.length >= max) break;
  }
  return out;
}

/** The task's reason for `attempts` the gate refused during `step`. */
export function gateAttemptReason(step: string, attempts: readonly string[]): string {
  return `the gate refused what a reviewer may never do during ${step}: ${attempts.join(' | ')}`;
}
