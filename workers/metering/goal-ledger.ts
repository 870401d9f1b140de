/**
 * A goal's shared spending ledger: one append-only file per goal that every metering proxy of the
 * goal (each worker run's, and the Brain's own session's) charges and reads, so that a goal budget
 * is ONE bound for all of them, enforced at the proxies, not a share of what remained when each
 * run started.
 *
 * File: `<pollyDir>/meter/goal-<goalId>.jsonl` (outside every sandbox mount: only the worker
 * runners and the Brain, outside the sandbox, write it). One JSON line per charge
 * ({@link GoalCharge}), appended with a single `write(2)` on an `O_APPEND` descriptor, so
 * concurrent writers never interleave (a line is far under the 4 KiB a local file system writes
 * at once) and nothing is rewritten: a crash or restart of any process loses no charge already
 * written, and a reader sums the lines (a torn last line, from a crash mid-write, is skipped until
 * it is complete).
 *
 * The bound: a proxy forwards a model request only while the goal's total, read from this file
 * when the request arrives, is under the limit, and charges the request when its response ends.
 * So the goal spends at most its limit plus the requests that were in flight when the total
 * crossed it: at most one per process metering the goal at that moment (each agent CLI makes its
 * model calls one at a time; claude's side requests, such as a session title, may add one).
 * docs/metering.md states it with the figures measured.
 */
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** One charge: a model request's usage as a proxy counted it, or the goal's spending carried over from before this ledger existed. */
export interface GoalCharge {
  /** ISO time. */
  at: string;
  /** Who spent it: a worker id, `brain` (the goal's own LLM session), or `carried` (spent before the ledger existed). */
  by: string;
  /** The task, or null (the Brain, carried). */
  task: string | null;
  /** Input (cache included) plus output tokens. */
  tokens: number;
  /** USD at config `prices`; null when the model has no price. */
  usd: number | null;
}

/** What a goal has spent, summed over its ledger. */
export interface GoalTotal {
  tokens: number;
  /** The sum of the known costs. */
  usd: number;
  /** Charges whose cost is unknown. */
  unpriced: number;
  /** Charges (lines). */
  charges: number;
}

/** The goal part of a run's metering (`TurnMeterSpec.goal`): which ledger to charge, and the goal's whole limit. */
export interface GoalMeterSpec {
  goalId: string;
  /** Absolute path of the goal's ledger file ({@link goalLedgerPath}). */
  ledger: string;
  /** The goal's budget (its whole limit, not what remains). Absent fields: no limit. */
  limit: { tokens?: number | null; usd?: number | null };
}

/** The ledger file of `goalId` under `pollyDir` (`.polly`). */
export function goalLedgerPath(pollyDir: string, goalId: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(goalId)) throw new Error(`goal ledger: ${JSON.stringify(goalId)} is not a goal id`);
  return join(pollyDir, 'meter', `goal-${goalId}.jsonl`);
}

/**
 * Create the ledger of a goal if it does not exist yet, its first line carrying what the goal had
 * spent before (`carried`, from the registry's ledgers: a goal that ran before this ledger existed
 * keeps its spending). Exclusive create: of two callers at once, one writes and the other finds it.
 * @returns true when this call created it.
 */
export function ensureGoalLedger(path: string, carried: { tokens: number; usd: number }): boolean {
  if (existsSync(path)) return false;
  mkdirSync(dirname(path), { recursive: true });
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    if (carried.tokens > 0 || carried.usd > 0) {
      const line: GoalCharge = { at: new Date().toISOString(), by: 'carried', task: null, tokens: carried.tokens, usd: carried.usd };
      writeSync(fd, `${JSON.stringify(line)}\n`);
    }
  } finally {
    closeSync(fd);
  }
  return true;
}

/** A reader and writer of one goal's ledger file, reading only what was appended since its last read. */
export interface GoalLedger {
  path: string;
  /** The goal's total now (reads what other processes appended since the last call). */
  total(): GoalTotal;
  /** Append one charge (a single write). */
  charge(c: Omit<GoalCharge, 'at'> & { at?: string }): void;
  /** Close the append descriptor (reading needs none). */
  close(): void;
}

/** A parsed charge line, or null for anything else (a torn or foreign line counts as nothing). */
function parseCharge(line: string): GoalCharge | null {
  try {
    const v = JSON.parse(line) as Partial<GoalCharge>;
    if (typeof v.tokens !== 'number' || !Number.isFinite(v.tokens) || v.tokens < 0) return null;
    if (v.usd !== null && (typeof v.usd !== 'number' || !Number.isFinite(v.usd) || v.usd < 0)) return null;
    return v as GoalCharge;
  } catch {
    return null;
  }
}

/**
 * A ledger at `path` (created empty when missing) to read and append. Reading opens the file for
 * each call and reads only what was appended since the last one, so a reader holds no descriptor;
 * appending keeps one descriptor open until {@link GoalLedger.close}.
 * @throws the file system's error when the directory cannot be made or the file opened.
 */
export function openGoalLedger(path: string): GoalLedger {
  mkdirSync(dirname(path), { recursive: true });
  closeSync(openSync(path, 'a', 0o600));
  const sum: GoalTotal = { tokens: 0, usd: 0, unpriced: 0, charges: 0 };
  let offset = 0;
  let tail = '';
  let appendFd: number | null = null;
  const readNew = (): void => {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      while (offset < size) {
        const buf = Buffer.alloc(Math.min(1 << 20, size - offset));
        const n = readSync(fd, buf, 0, buf.length, offset);
        if (n <= 0) break;
        offset += n;
        const lines = (tail + buf.subarray(0, n).toString('utf8')).split('\n');
        tail = lines.pop() ?? '';
        for (const l of lines) {
          const c = l.trim() ? parseCharge(l) : null;
          if (!c) continue;
          sum.charges++;
          sum.tokens += c.tokens;
          if (c.usd === null) sum.unpriced++;
          else sum.usd += c.usd;
        }
      }
    } finally {
      closeSync(fd);
    }
  };
  return {
    path,
    total() {
      readNew();
      return { ...sum };
    },
    charge(c) {
      const line: GoalCharge = { at: c.at ?? new Date().toISOString(), by: c.by, task: c.task, tokens: c.tokens, usd: c.usd };
      appendFd ??= openSync(path, 'a', 0o600);
      // One write on an O_APPEND descriptor: the line lands whole at the end, whoever else appends.
      writeSync(appendFd, `${JSON.stringify(line)}\n`);
    },
    close() {
      if (appendFd === null) return;
      try {
        closeSync(appendFd);
      } catch {
        /* already closed */
      }
      appendFd = null;
    },
  };
}

/** Which limit of `limit` the total has reached (spent ≥ limit), or null. */
export function goalLimitReached(limit: GoalMeterSpec['limit'], total: GoalTotal): { kind: 'tokens' | 'usd'; limit: number; spent: number } | null {
  if (typeof limit.tokens === 'number' && total.tokens >= limit.tokens) return { kind: 'tokens', limit: limit.tokens, spent: total.tokens };
  if (typeof limit.usd === 'number' && total.usd >= limit.usd) return { kind: 'usd', limit: limit.usd, spent: total.usd };
  return null;
}
