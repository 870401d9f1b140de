/**
 * A minimal in-process {@link WorkerSupervisor} for PR-step tests: each turn prepares the real gate
 * (`prepareGate`) and runs the real agent CLI through its adapter (`createAgentAdapter`), in this
 * process. It does not survive a crash (that is workers/worker-supervisor.ts's job); it adopts a
 * repeated order id by returning the first run's promise, and records every request for asserts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PollyConfig } from '../../brain/config-schema.js';
import type { WorkerSupervisor, WorkerTurnRequest, WorkerTurnResult } from '../../brain/task-tools/types.js';
import { prepareGate } from '../../gate/harness-gate.js';
import { createAgentAdapter } from '../../workers/agent-factory.js';

export interface DirectSupervisor extends WorkerSupervisor {
  /** Every request received, in order. */
  requests: WorkerTurnRequest[];
  /** Every result, in order. */
  results: WorkerTurnResult[];
}

/** Create it; `stateRoot` holds the gate and agent state dirs (outside any repository). */
export function createDirectSupervisor(options: { config: PollyConfig; stateRoot: string; gateJournalPath?: string | null }): DirectSupervisor {
  const runs = new Map<string, Promise<WorkerTurnResult>>();
  const requests: WorkerTurnRequest[] = [];
  const results: WorkerTurnResult[] = [];
  let n = 0;
  return {
    requests,
    results,
    async runTurn(request) {
      const earlier = runs.get(request.orderId);
      if (earlier) return { ...(await earlier), adopted: true };
      requests.push(request);
      const workerId = `w${++n}`;
      const run = (async (): Promise<WorkerTurnResult> => {
        const gate = await prepareGate(request.harness, {
          role: request.role,
          context: request.gateContext,
          stateDir: join(options.stateRoot, 'gate', workerId),
          journalPath: options.gateJournalPath ?? null,
          policy: options.config.policies,
        });
        const agentDir = join(options.stateRoot, 'agents', request.taskId, request.harness);
        mkdirSync(agentDir, { recursive: true });
        const adapter = createAgentAdapter(request.harness, options.config, { model: request.model });
        const r = await adapter.start({
          cwd: request.cwd,
          prompt: request.prompt,
          resumeSessionId: request.resumeSessionId,
          model: request.model,
          readOnly: options.config.policies.purpose_guard.read_only.includes(request.purpose),
          gate: { args: gate.args, env: gate.env },
          env: request.env,
          stateDir: agentDir,
          ...(request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {}),
        }).result;
        const out = { ...r, workerId, adopted: false };
        results.push(out);
        return out;
      })();
      runs.set(request.orderId, run);
      return run;
    },
    async cancelTask() {
      return { cancelled: 0 };
    },
    async reconcile() {
      return { adopted: [], reaped: [] };
    },
    async live() {
      return [];
    },
  };
}

/** Wrap any supervisor (e.g. workers/worker-supervisor.ts) to record its requests and results. */
export function recordingSupervisor(inner: WorkerSupervisor): DirectSupervisor {
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
