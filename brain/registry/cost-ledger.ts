/**
 * The cost ledger: every agent turn's tokens and cost, kept on its task (`TaskRecord.ledger`) and
 * rolled up per plan and goal by summing tasks.
 *
 * Storage: on the task in the registry, as exact running totals (overall and per role) plus the
 * last {@link LEDGER_TURNS_KEPT} turn entries. The registry is rewritten on every update, so it
 * must stay small; totals never drop a turn, and the journal's `task.turn_usage` event carries
 * every turn for the audit trail (its `seq` orders them).
 *
 * Units: token counts; cost in USD as the agent CLI reports it. A CLI that reports no cost (codex;
 * claude for a turn stopped before its `result`) leaves the turn's cost `null` = unknown, never 0:
 * totals keep the known sum and count the turns of unknown cost, and {@link formatCost} renders
 * "unknown" or "≥ $X (some turns unknown)", and {@link unknownCostNote} says why.
 *
 * A metered turn (`source: 'proxy'`, workers/metering/, docs/metering.md) is priced by Polly from
 * config `prices`; unknown without one. For a turn from before metering (the stream's figures):
 * Polly has no price table of its own. A CLI prices a turn from ITS list for the model id it was
 * given, wherever the model actually ran: a turn answered by a model endpoint on this machine
 * (loopback, e.g. Polly's scripted model server in `npm run demo` and `polly try`) was billed by no
 * one, so its figure is kept apart (`unbilledCostUsd`) and shown as "not billed".
 */
import type { Harness, Purpose } from '../core/vocabulary.js';

/** How many turn entries a task keeps (totals cover all of them). */
export const LEDGER_TURNS_KEPT = 50;

/** Who spent it: the implementer's first turn (`implement`), its follow-ups, a reviewer, a read-only worker, or the goal's own LLM session (`brain`, on the goal: `GoalRecord.ledger`). */
export type LedgerRole = Purpose | 'followup' | 'brain';

/** One agent turn's usage (a subset of workers/agents/agent-adapter.ts `UsageEvent`). */
export interface UsageFigures {
  /** Every input token, cache reads and writes included. */
  inputTokens: number;
  outputTokens: number;
  /** The cached part of the input, where the CLI reports it; else null. */
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  /** USD; null when the CLI reported no cost for (part of) the turn. */
  costUsd: number | null;
}

/** One turn in the ledger. */
export interface LedgerTurn extends UsageFigures {
  /** ISO time the turn ended. */
  at: string;
  role: LedgerRole;
  harness: Harness;
  workerId: string;
  orderId: string;
  /** How the turn ended (AgentRunStatus). */
  status: string;
  /** False when the CLI reported no usage at all for the turn (tokens 0, cost unknown). */
  reported: boolean;
  /** The model endpoint the agent was pointed at instead of its vendor's API (a base URL), or null/absent for the vendor's own. */
  endpoint?: string | null;
  /**
   * Where the figures come from: `proxy`, the run's metering proxy, which read them from the
   * model API's own responses (workers/metering/); `stream`, the agent CLI's own output (a turn
   * run before metering, or by a runner without it). Absent: `stream`.
   */
  source?: 'proxy' | 'stream';
  /** Model requests the proxy counted (source `proxy`). */
  requests?: number;
  /** What the cross-check found: the agent's stream disagreeing with the proxy, or an impossible value ({@link crossCheckUsage}). Absent: nothing. */
  findings?: string[];
}

/** Sums over turns. `costUsd` is the sum of the KNOWN costs; `unknownCostTurns` says how many turns had none. */
export interface LedgerTotals {
  turns: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  unknownCostTurns: number;
  /** The part of `costUsd` reported for turns served on this machine ({@link isLocalEndpoint}): not billed. Absent: 0. */
  unbilledCostUsd?: number;
  /** How many turns that part covers. Absent: 0. */
  unbilledCostTurns?: number;
}

/** A task's ledger. */
export interface TaskLedger {
  totals: LedgerTotals;
  byRole: Partial<Record<LedgerRole, LedgerTotals>>;
  /** The last {@link LEDGER_TURNS_KEPT} turns, oldest first. */
  turns: LedgerTurn[];
  /** Turns counted in the totals whose entries were dropped from `turns`. */
  droppedTurns: number;
}

/** Zero totals. */
export function emptyTotals(): LedgerTotals {
  return { turns: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, unknownCostTurns: 0 };
}

/** True when `url` is a model endpoint on this machine (loopback host: 127.0.0.0/8, ::1, localhost), e.g. Polly's scripted model server. */
export function isLocalEndpoint(url: string | null | undefined): boolean {
  if (!url) return false;
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

/** The usage-shaped events of a turn (structurally `UsageEvent` of workers/agents/agent-adapter.ts). */
export interface UsageLike extends UsageFigures {
  type: 'usage';
  scope?: 'call' | 'turn';
  callId?: string | null;
}

/**
 * The usage of one turn from its normalised events, in order: the sum of its `turn`-scoped usage
 * events when there are any (authoritative: claude's `result`, codex's `turn.completed`), else the
 * sum of its `call`-scoped ones (pi per model call; claude's per-message usage of a turn stopped
 * before its result), the last event of a repeated `callId` counting once. Cost is null as soon
 * as one summed event has none. Null when the turn reported no usage at all.
 */
export function turnUsage(events: ReadonlyArray<{ type: string }>): UsageFigures | null {
  const usage = events.filter((e): e is UsageLike => e.type === 'usage');
  if (usage.length === 0) return null;
  const whole = usage.filter((e) => e.scope === 'turn');
  let picked: UsageLike[];
  if (whole.length > 0) picked = whole;
  else {
    const byCall = new Map<string, UsageLike>();
    const anonymous: UsageLike[] = [];
    for (const e of usage) {
      if (e.callId) byCall.set(e.callId, e);
      else anonymous.push(e);
    }
    picked = [...anonymous, ...byCall.values()];
  }
  const out: UsageFigures = { inputTokens: 0, outputTokens: 0, cacheReadTokens: null, cacheWriteTokens: null, costUsd: 0 };
  for (const e of picked) {
    out.inputTokens += e.inputTokens;
    out.outputTokens += e.outputTokens;
    if (e.cacheReadTokens !== null) out.cacheReadTokens = (out.cacheReadTokens ?? 0) + e.cacheReadTokens;
    if (e.cacheWriteTokens !== null) out.cacheWriteTokens = (out.cacheWriteTokens ?? 0) + e.cacheWriteTokens;
    out.costUsd = out.costUsd === null || e.costUsd === null ? null : out.costUsd + e.costUsd;
  }
  return out;
}

/** The part of a metering proxy's `metered` event the ledger reads (workers/agents/agent-adapter.ts `MeteringEvent`). */
interface MeteredLike {
  type: 'metered';
  request: UsageFigures & { reported: boolean; impossible: string[]; model: string | null };
}

/**
 * The usage of a metered turn: the sum of its `metered` events (one per model request, as the
 * metering proxy read it from the API's responses). Null when the turn was not metered (no
 * `metering` event). Cost null as soon as one request has no price.
 */
export function meteredUsage(events: ReadonlyArray<{ type: string }>): (UsageFigures & { requests: number; impossible: string[] }) | null {
  if (!events.some((e) => e.type === 'metering')) return null;
  const out = {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: null as number | null,
    cacheWriteTokens: null as number | null,
    costUsd: 0 as number | null,
    requests: 0,
    impossible: [] as string[],
  };
  for (const e of events) {
    if (e.type !== 'metered') continue;
    const r = (e as MeteredLike).request;
    out.requests++;
    out.inputTokens += r.inputTokens;
    out.outputTokens += r.outputTokens;
    if (r.cacheReadTokens !== null) out.cacheReadTokens = (out.cacheReadTokens ?? 0) + r.cacheReadTokens;
    if (r.cacheWriteTokens !== null) out.cacheWriteTokens = (out.cacheWriteTokens ?? 0) + r.cacheWriteTokens;
    out.costUsd = out.costUsd === null || r.costUsd === null ? null : out.costUsd + r.costUsd;
    for (const i of r.impossible) out.impossible.push(`the model API sent ${i}${r.model ? ` (${r.model})` : ''}`);
  }
  return out;
}

/** True when `v` is a possible token count (a non-negative integer). */
const possible = (v: number | null): boolean => v === null || (Number.isInteger(v) && v >= 0);

/** A finding when `u` (one usage event, or a sum) holds a value no API sends (negative, fractional, not a number); else null. */
export function impossibleUsage(u: UsageFigures, harness: Harness): string | null {
  const bad = (['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const).filter((k) => !possible(u[k]));
  const badCost = u.costUsd !== null && !(u.costUsd >= 0);
  if (bad.length === 0 && !badCost) return null;
  const what = [...bad.map((k) => `${k} ${u[k]}`), ...(badCost ? [`cost ${u.costUsd}`] : [])].join(', ');
  return `the ${harness} stream reported impossible usage (${what}); the ledger keeps the proxy's count`;
}

/**
 * Compare what the agent's own stream said (its usage events) with what the proxy counted. A
 * finding is: an impossible value in the stream (negative, fractional, not a number); the stream
 * claiming more tokens than the proxy saw; or, for a turn that ended `ok` on a CLI whose stream
 * counts every model request it made (codex, pi), any difference. claude's stream leaves out its
 * side requests (a session title, a quick classification), so for claude less is expected.
 * @returns one sentence per finding; empty when the stream agrees or reported nothing.
 */
export function crossCheckUsage(stream: UsageFigures | null, proxy: Pick<UsageFigures, 'inputTokens' | 'outputTokens'>, harness: Harness, status: string): string[] {
  if (!stream) return [];
  const out: string[] = [];
  const lie = impossibleUsage(stream, harness);
  if (lie) return [lie];
  const s = stream.inputTokens + stream.outputTokens;
  const p = proxy.inputTokens + proxy.outputTokens;
  const differs = stream.inputTokens !== proxy.inputTokens || stream.outputTokens !== proxy.outputTokens;
  if (s > p || (differs && status === 'ok' && harness !== 'claude-code')) {
    out.push(
      `the ${harness} stream reported ${stream.inputTokens} in / ${stream.outputTokens} out tokens, the metering proxy counted ${proxy.inputTokens} in / ${proxy.outputTokens} out; the ledger keeps the proxy's count`,
    );
  }
  return out;
}

/**
 * A ledger turn from a finished turn's events (`reported: false` when it carried no usage). A
 * metered turn ({@link meteredUsage}) takes the proxy's figures (`source: 'proxy'`) and keeps the
 * stream's only as a cross-check ({@link crossCheckUsage}, in `findings`); otherwise the stream's.
 */
export function ledgerTurn(events: ReadonlyArray<{ type: string }>, meta: Omit<LedgerTurn, keyof UsageFigures | 'reported'>): LedgerTurn {
  const metered = meteredUsage(events);
  const usage = turnUsage(events);
  if (metered) {
    const { requests, impossible, ...figures } = metered;
    // Each usage event on its own first: a forged negative line can hide inside a positive sum.
    const lies = events
      .filter((e): e is UsageLike => e.type === 'usage')
      .map((e) => impossibleUsage(e, meta.harness))
      .filter((f): f is string => f !== null);
    const findings = [...impossible, ...(lies.length ? lies : crossCheckUsage(usage, figures, meta.harness, meta.status))];
    return { ...meta, ...figures, reported: requests > 0, source: 'proxy', requests, ...(findings.length ? { findings } : {}) };
  }
  return { ...meta, ...(usage ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: null, cacheWriteTokens: null, costUsd: null }), reported: usage !== null };
}

/** `totals` plus one turn's figures (a new object); a known cost of a turn on a local endpoint also counts as unbilled. */
export function addToTotals(totals: LedgerTotals, u: UsageFigures & { endpoint?: string | null }): LedgerTotals {
  const unbilled = u.costUsd !== null && isLocalEndpoint(u.endpoint);
  return withUnbilled(
    {
      turns: totals.turns + 1,
      inputTokens: totals.inputTokens + u.inputTokens,
      outputTokens: totals.outputTokens + u.outputTokens,
      cacheReadTokens: totals.cacheReadTokens + (u.cacheReadTokens ?? 0),
      cacheWriteTokens: totals.cacheWriteTokens + (u.cacheWriteTokens ?? 0),
      costUsd: totals.costUsd + (u.costUsd ?? 0),
      unknownCostTurns: totals.unknownCostTurns + (u.costUsd === null ? 1 : 0),
    },
    (totals.unbilledCostUsd ?? 0) + (unbilled ? u.costUsd! : 0),
    (totals.unbilledCostTurns ?? 0) + (unbilled ? 1 : 0),
  );
}

/** `t` with the unbilled figures set when there are any (absent otherwise: stored totals stay as they were). */
function withUnbilled(t: LedgerTotals, usd: number, turns: number): LedgerTotals {
  return turns > 0 ? { ...t, unbilledCostUsd: usd, unbilledCostTurns: turns } : t;
}

/** The sum of several totals (a plan's or goal's roll-up of its tasks). */
export function sumTotals(list: ReadonlyArray<LedgerTotals | undefined>): LedgerTotals {
  const out = emptyTotals();
  let unbilledUsd = 0;
  let unbilledTurns = 0;
  for (const t of list) {
    if (!t) continue;
    out.turns += t.turns;
    out.inputTokens += t.inputTokens;
    out.outputTokens += t.outputTokens;
    out.cacheReadTokens += t.cacheReadTokens;
    out.cacheWriteTokens += t.cacheWriteTokens;
    out.costUsd += t.costUsd;
    out.unknownCostTurns += t.unknownCostTurns;
    unbilledUsd += t.unbilledCostUsd ?? 0;
    unbilledTurns += t.unbilledCostTurns ?? 0;
  }
  return withUnbilled(out, unbilledUsd, unbilledTurns);
}

/** `ledger` (absent: empty) with `turn` added: totals, the role's totals, the capped turn list. Returns a new ledger. */
export function addTurn(ledger: TaskLedger | undefined, turn: LedgerTurn, keep = LEDGER_TURNS_KEPT): TaskLedger {
  const base: TaskLedger = ledger ?? { totals: emptyTotals(), byRole: {}, turns: [], droppedTurns: 0 };
  const turns = [...base.turns, turn];
  const drop = Math.max(0, turns.length - keep);
  return {
    totals: addToTotals(base.totals, turn),
    byRole: { ...base.byRole, [turn.role]: addToTotals(base.byRole[turn.role] ?? emptyTotals(), turn) },
    turns: turns.slice(drop),
    droppedTurns: base.droppedTurns + drop,
  };
}

/** Tokens that count against a token budget: input (cache included) plus output. */
export function totalTokens(t: Pick<LedgerTotals, 'inputTokens' | 'outputTokens'>): number {
  return t.inputTokens + t.outputTokens;
}

/** A USD amount for people: 4 decimals under $1, else 2. */
export function formatUsd(usd: number): string {
  return `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

/**
 * The cost of `totals` in words: `$0.0123`; `unknown` when no turn reported a cost (or there were
 * no turns with usage); `≥ $0.0123 (some turns unknown)` when some did and some did not. A figure
 * reported for turns served on this machine (a local model, {@link isLocalEndpoint}) is marked:
 * `$0.0802 not billed` when all of it is, `$0.5802 ($0.0802 not billed)` when part is.
 */
export function formatCost(totals: Pick<LedgerTotals, 'turns' | 'costUsd' | 'unknownCostTurns' | 'unbilledCostUsd' | 'unbilledCostTurns'>): string {
  if (totals.turns === 0) return '$0';
  if (totals.unknownCostTurns >= totals.turns) return 'unknown';
  const unbilledTurns = totals.unbilledCostTurns ?? 0;
  const known = totals.unknownCostTurns === 0 ? formatUsd(totals.costUsd) : `≥ ${formatUsd(totals.costUsd)}`;
  const unknown = totals.unknownCostTurns === 0 ? '' : ' (some turns unknown)';
  if (unbilledTurns === 0) return `${known}${unknown}`;
  if (unbilledTurns >= totals.turns - totals.unknownCostTurns) return `${known} not billed${unknown}`;
  return `${known}${unknown} (${formatUsd(totals.unbilledCostUsd ?? 0)} not billed)`;
}

/** Why a harness's turn has no cost figure (see the adapters in workers/agents/). */
export const NO_COST_REASON: Record<Harness, string> = {
  codex: 'codex reports tokens but never a cost',
  pi: 'pi has no price for a model on an endpoint Polly configured (workers.pi.base_url), so Polly counts its 0 as unknown',
  'claude-code': 'claude reports a cost only for a turn that ends with its result',
};

/**
 * One sentence on the cost figures of `turns` for people: where they come from, why some are
 * unknown (naming the harnesses that reported none, {@link NO_COST_REASON}) and which are not billed.
 * Empty string when there are no turns.
 */
export function costNote(turns: readonly LedgerTurn[]): string {
  if (turns.length === 0) return '';
  const metered = turns.filter((t) => t.source === 'proxy');
  const streamed = turns.filter((t) => t.source !== 'proxy');
  const parts: string[] = [];
  if (metered.length) parts.push("Tokens are what Polly's metering proxy read from the model API's responses; cost is priced from config prices (docs/metering.md).");
  if (streamed.length) parts.push('Cost is what each agent CLI reported, priced from its own list (Polly has no price table for those turns; budgets can cap tokens).');
  if (metered.some((t) => t.costUsd === null)) parts.push('Unknown where the model has no entry under prices in .polly/config.yaml.');
  const unknown = [...new Set(streamed.filter((t) => t.costUsd === null).map((t) => t.harness))];
  if (unknown.length) parts.push(`Unknown for ${unknown.map((h) => `${h} (${NO_COST_REASON[h]})`).join('; ')}.`);
  const local = [...new Set(turns.filter((t) => t.costUsd !== null && isLocalEndpoint(t.endpoint)).map((t) => t.endpoint!))];
  if (local.length) parts.push(`Not billed: the model behind ${local.join(', ')} runs on this machine (e.g. Polly's scripted model), so the figure is a list price nobody paid.`);
  return parts.join(' ');
}

/** One line for people: `1234 in / 56 out tokens (cache 100 read, 0 written), $0.0123 over 2 turns`. */
export function formatTotals(t: LedgerTotals): string {
  const cache = t.cacheReadTokens || t.cacheWriteTokens ? ` (cache ${t.cacheReadTokens} read, ${t.cacheWriteTokens} written)` : '';
  return `${t.inputTokens} in / ${t.outputTokens} out tokens${cache}, ${formatCost(t)} over ${t.turns} turn${t.turns === 1 ? '' : 's'}`;
}

/** The cost figure for machines: the known sum, or null when every turn's cost is unknown; `complete` false when some are unknown. */
export function costJson(t: LedgerTotals): { usd: number | null; complete: boolean } {
  return { usd: t.turns > 0 && t.unknownCostTurns >= t.turns ? null : t.costUsd, complete: t.unknownCostTurns === 0 };
}
