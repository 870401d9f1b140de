/**
 * The metering of a goal's own LLM session (the Brain's claude, ./llm-brain.ts): the same metering
 * proxy as a worker run's (workers/metering/metering-proxy.ts), started by the Brain process for
 * each goal it hosts, with the Brain's `ANTHROPIC_BASE_URL` pointed at it.
 *
 * - Every model request is read from the API's own response and recorded on the goal in the
 *   registry as it ends (`GoalRecord.ledger`, role `brain`, `source: 'proxy'`, one entry per
 *   request, and a `goal.brain_usage` journal event), so `polly status` shows it per goal and a
 *   Brain restart loses no request already answered.
 * - Every request is charged to the goal's shared ledger (workers/metering/goal-ledger.ts) like a
 *   worker run's, so the goal's budget counts the Brain's tokens and cost; once the goal's total
 *   reaches its budget the proxy refuses the Brain's next request as it does a worker's (the
 *   Brain's turn then ends with the API error, and `polly status` shows the goal's budget reached).
 * - The goal's budget is read from the registry before each Brain turn ({@link BrainMeter.refresh}):
 *   it exists only once a plan of the goal is approved.
 *
 * Upstream: the Brain's `ANTHROPIC_BASE_URL` when set (the scripted model in tests and the demo),
 * else https://api.anthropic.com (the proxy makes the HTTPS request; docs/metering.md).
 */
import { startMeteringProxy, type MeteredRequest, type MeteringProxy } from '../../workers/metering/metering-proxy.js';
import { openGoalLedger, type GoalLedger, type GoalMeterSpec } from '../../workers/metering/goal-ledger.js';
import { VENDOR_DEFAULTS } from '../../workers/metering/turn-meter.js';
import type { PollyConfig } from '../config/config-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { addTurn, type LedgerTurn } from '../registry/cost-ledger.js';
import { goalBudget, goalMeterState } from '../task-tools/turn-budget.js';

/** A goal's Brain meter. */
export interface BrainMeter {
  /** The Brain's env with `ANTHROPIC_BASE_URL` pointing at the proxy. */
  env: Record<string, string>;
  proxy: MeteringProxy;
  /** Read the goal's budget again (before each Brain turn: a plan approved since sets it). */
  refresh(): Promise<void>;
  /** Wait for the recorded requests to be written, stop the proxy. */
  close(): Promise<void>;
}

/** The ledger entry of one Brain model request. */
export function brainLedgerTurn(goalId: string, r: MeteredRequest): LedgerTurn {
  return {
    at: r.at,
    role: 'brain',
    harness: 'claude-code',
    workerId: `brain:${goalId}`,
    orderId: `brain:${goalId}`,
    status: String(r.status),
    reported: r.reported,
    endpoint: r.upstream,
    source: 'proxy',
    requests: 1,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    cacheReadTokens: r.cacheReadTokens,
    cacheWriteTokens: r.cacheWriteTokens,
    costUsd: r.costUsd,
    ...(r.impossible.length ? { findings: r.impossible.map((i) => `the model API sent ${i}${r.model ? ` (${r.model})` : ''}`) } : {}),
  };
}

/**
 * Start the proxy of goal `goalId`'s Brain session.
 * @param env  the env the Brain's claude would get (deps.agentEnv): its `ANTHROPIC_BASE_URL` is the upstream.
 * @throws when the proxy cannot listen or the goal's ledger cannot be made (the goal then fails with the reason).
 */
export async function startBrainMeter(o: {
  store: RegistryStore;
  repoRoot: string;
  goalId: string;
  env: Record<string, string>;
  config: Pick<PollyConfig, 'prices'>;
  log?: (line: string) => void;
}): Promise<BrainMeter> {
  const reg = await o.store.read();
  const state = goalMeterState(reg, o.repoRoot, o.goalId);
  const ledger: GoalLedger = openGoalLedger(state.ledger);
  const limitOf = (b: ReturnType<typeof goalBudget>): GoalMeterSpec['limit'] => ({
    ...(typeof b?.tokens === 'number' ? { tokens: b.tokens } : {}),
    ...(typeof b?.usd === 'number' ? { usd: b.usd } : {}),
  });
  const goal = { ledger, limit: limitOf(goalBudget(reg, o.goalId)), goalId: o.goalId, by: 'brain', task: null };
  let writes: Promise<unknown> = Promise.resolve();
  let closing: Promise<void> | null = null;
  const upstream = o.env.ANTHROPIC_BASE_URL || VENDOR_DEFAULTS.ANTHROPIC_BASE_URL;
  let proxy: MeteringProxy;
  try {
    proxy = await startMeteringProxy({
      upstreams: [upstream],
      prices: o.config.prices ?? {},
      goal,
      onRequest: (r) => {
        // In order, one registry write per request: the Brain's usage is on the goal as soon as a response ends.
        writes = writes
          .then(() =>
            o.store.update((draft, tx) => {
              const g = draft.goals[o.goalId];
              if (!g) return;
              const turn = brainLedgerTurn(o.goalId, r);
              g.ledger = addTurn(g.ledger, turn);
              tx.emit('goal.brain_usage', { goalId: o.goalId, ...turn });
            }),
          )
          .catch((error) => o.log?.(`[polly] goal ${o.goalId}: could not record the Brain's usage: ${(error as Error).message}`));
      },
      onRefused: (r) => o.log?.(`[polly] goal ${o.goalId}: the Brain's model request was refused: the goal's budget is spent (${r.kind} ${r.spent} ≥ ${r.limit})`),
    });
  } catch (error) {
    ledger.close();
    throw error;
  }
  return {
    env: { ...o.env, ANTHROPIC_BASE_URL: proxy.urlFor(0) },
    proxy,
    async refresh() {
      goal.limit = limitOf(goalBudget(await o.store.read(), o.goalId));
    },
    close() {
      closing ??= (async () => {
        await proxy.close();
        await writes;
        ledger.close();
      })();
      return closing;
    },
  };
}
