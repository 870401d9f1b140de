/**
 * The metering of one worker run (the worker runner's side): which endpoints the agent may reach,
 * each rewritten to go through this run's metering proxy (./metering-proxy.ts), and the events
 * the runner records for the Brain.
 *
 * Every model base URL the agent is given becomes a proxy URL: each `*_BASE_URL` variable of its
 * environment (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, …), `workers.codex.provider.base_url` and
 * `workers.pi.base_url`. Where none is set, the vendor's API is the upstream
 * (`ANTHROPIC_BASE_URL` → https://api.anthropic.com, `OPENAI_BASE_URL` → https://api.openai.com/v1):
 * the CLI talks plain HTTP to the proxy on loopback and the proxy makes the HTTPS request, so
 * nothing goes through an opaque CONNECT tunnel. The sandbox is then given only the proxy's
 * loopback port (workers/sandbox/sandbox-profiles.ts `modelEndpoints` sees only proxy URLs).
 * Not metered: pi with a built-in provider (no `workers.pi.base_url`), whose endpoint Polly does
 * not know, and codex signed in with a ChatGPT account (its backend is not an API with usage):
 * see docs/metering.md.
 */
import type { ModelPrice } from './api-usage.js';
import { openGoalLedger, type GoalLedger, type GoalMeterSpec } from './goal-ledger.js';
import { startMeteringProxy, type MeterBudget, type MeteredRequest, type MeteringProxy, type RefusedRequest } from './metering-proxy.js';

/** What the Brain hands a run (`WorkerTurnRequest.meter`): the budget left and the prices. */
export interface TurnMeterSpec {
  /** What remains of the task's own budget, or null for no limit (the goal's is `goal`). */
  budget: MeterBudget | null;
  /** Config `prices`. */
  prices: Record<string, ModelPrice>;
  /**
   * The goal's shared budget: the run charges every request to the goal's ledger and is refused
   * once the goal's total (all its runs and its Brain) reaches the limit. Absent: the run belongs
   * to no goal, or the goal has no budget (it is still charged when `ledger` is set).
   */
  goal?: GoalMeterSpec | null;
}

/** The part of the run's config the meter rewrites (structurally a WorkerRunConfig's `workers`). */
export interface MeteredWorkers {
  codex: { provider?: { id: string; base_url: string; env_key: string } | null };
  pi: { base_url?: string | null };
}

/**
 * Why Polly's metering proxy cannot count a harness's model requests, or null when it can:
 * - pi with no `workers.pi.base_url` runs a built-in provider whose endpoint Polly does not know;
 * - codex with no `workers.codex.provider` and no API key (`OPENAI_API_KEY`, `CODEX_API_KEY`) is
 *   signed in with a ChatGPT account, whose backend is not an API at a base URL.
 * claude always honours `ANTHROPIC_BASE_URL`. The sentence names the config that makes it meterable.
 * @param env  the environment the worker gets its keys from.
 */
export function unmeteredReason(
  harness: 'claude-code' | 'codex' | 'pi',
  workers: { codex: { provider?: { base_url: string } | null }; pi: { base_url?: string | null } },
  env: Record<string, string | undefined>,
): string | null {
  if (harness === 'pi' && !workers.pi.base_url) {
    return "pi runs a built-in provider whose endpoint Polly does not know, so Polly's metering proxy cannot count it: set workers.pi.base_url (and workers.pi.api) in .polly/config.yaml to the provider's API";
  }
  if (harness === 'codex' && !workers.codex.provider && !env.OPENAI_API_KEY && !env.CODEX_API_KEY) {
    return "codex has no workers.codex.provider and no OPENAI_API_KEY or CODEX_API_KEY, so it signs in with a ChatGPT account, whose backend Polly's metering proxy cannot count: configure workers.codex.provider (base_url, env_key) in .polly/config.yaml or set OPENAI_API_KEY";
  }
  return null;
}

/** The vendors' APIs, used as upstreams when the agent is given no base URL. */
export const VENDOR_DEFAULTS = { ANTHROPIC_BASE_URL: 'https://api.anthropic.com', OPENAI_BASE_URL: 'https://api.openai.com/v1' } as const;

export interface TurnMeter<W extends MeteredWorkers> {
  proxy: MeteringProxy;
  /** The agent's env with every base URL pointing at the proxy. */
  env: Record<string, string>;
  /** The run's `workers` config with the codex and pi base URLs pointing at the proxy. */
  workers: W;
  /** Upstream base URLs, by proxy route index. */
  upstreams: string[];
  /** Stop the proxy and close the goal's ledger. */
  close(): Promise<void>;
}

/**
 * Start the proxy for one run and rewrite the agent's endpoints to it.
 * @param env  the agent's explicit env (values from the runner's environment).
 * @param processEnv  the runner's own environment: model variables there reach the agent too (workers/sandbox/worker-env.ts), so they are rewritten as well.
 */
export async function startTurnMeter<W extends MeteredWorkers>(input: {
  env: Record<string, string>;
  processEnv: NodeJS.ProcessEnv;
  workers: W;
  spec: TurnMeterSpec | null | undefined;
  /** Who this run is in the goal's ledger: the worker id and its task. */
  who?: { by: string; task: string | null };
  onRequest: (r: MeteredRequest) => void;
  onRefused: (r: RefusedRequest) => void;
}): Promise<TurnMeter<W>> {
  const upstreams: string[] = [];
  const route = (url: string): number => {
    const i = upstreams.indexOf(url);
    if (i >= 0) return i;
    upstreams.push(url);
    return upstreams.length - 1;
  };
  const envRoutes: Array<[string, number]> = [];
  const merged: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(input.processEnv)) if (/^(ANTHROPIC|OPENAI)_[A-Z0-9_]*BASE_URL$/.test(k)) merged[k] = v;
  Object.assign(merged, input.env);
  for (const [k, v] of Object.entries(merged)) if (/_BASE_URL$/.test(k) && v && /^https?:\/\//.test(v)) envRoutes.push([k, route(v)]);
  for (const [k, url] of Object.entries(VENDOR_DEFAULTS)) if (!merged[k]) envRoutes.push([k, route(url)]);
  const codexUrl = input.workers.codex.provider?.base_url;
  const codexRoute = codexUrl ? route(codexUrl) : null;
  const piUrl = input.workers.pi.base_url;
  const piRoute = piUrl ? route(piUrl) : null;
  const goalSpec = input.spec?.goal ?? null;
  const ledger: GoalLedger | null = goalSpec ? openGoalLedger(goalSpec.ledger) : null;
  let proxy: MeteringProxy;
  try {
    proxy = await startMeteringProxy({
      upstreams,
      budget: input.spec?.budget ?? null,
      prices: input.spec?.prices ?? {},
      onRequest: input.onRequest,
      onRefused: input.onRefused,
      goal: goalSpec && ledger ? { ledger, limit: goalSpec.limit, goalId: goalSpec.goalId, by: input.who?.by ?? 'worker', task: input.who?.task ?? null } : null,
    });
  } catch (error) {
    ledger?.close();
    throw error;
  }
  const env = { ...input.env };
  for (const [k, i] of envRoutes) env[k] = proxy.urlFor(i);
  const workers = structuredClone(input.workers);
  if (codexRoute !== null && workers.codex.provider) workers.codex.provider = { ...workers.codex.provider, base_url: proxy.urlFor(codexRoute) };
  if (piRoute !== null) workers.pi = { ...workers.pi, base_url: proxy.urlFor(piRoute) };
  const close = async (): Promise<void> => {
    await proxy.close();
    ledger?.close();
  };
  return { proxy, env, workers, upstreams, close };
}
