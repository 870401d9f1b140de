/**
 * A recording wrapper around a {@link WorkerSupervisor} (the real one, workers/worker-supervisor.ts):
 * PR-step tests look at what each turn was asked (harness, role, cwd, prompt) and what it returned.
 */
import type { WorkerSupervisor, WorkerTurnRequest, WorkerTurnResult } from '../../workers/worker-turn.js';

export interface RecordingSupervisor extends WorkerSupervisor {
  /** Every request received, in order. */
  requests: WorkerTurnRequest[];
  /** Every result, in order. */
  results: WorkerTurnResult[];
}

/** Wrap `inner` to record its requests and results. */
export function recordingSupervisor(inner: WorkerSupervisor): RecordingSupervisor {
  const requests: WorkerTurnRequest[] = [];
  const results: WorkerTurnResult[] = [];
  return {
    requests,
    results,
    async runTurn(request, opts) {
      requests.push(request);
      const r = await inner.runTurn(request, opts);
      results.push(r);
      return r;
    },
    cancelTask: (id) => inner.cancelTask(id),
    reconcile: () => inner.reconcile(),
    live: () => inner.live(),
  };
}
