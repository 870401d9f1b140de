/**
 * The durable workflow runtime: admitted workflows run on a run store, one work order at a time.
 *
 * Every operation is ONE `store.updateRun` of the one run it touches (one atomic, durable commit
 * with its journal lines), and no run state is cached in memory: an MCP server, a second MCP
 * server and the Brain may drive the same store concurrently, and a process killed at any point
 * leaves the store before or after a step, never inside one. A step's cost does not depend on how
 * many other runs exist; concurrent steps share a commit (group commit, `run-store.ts`).
 *
 * Ownership of results: the run and order an operation returns are the update's own draft objects,
 * not copies. The store parsed that draft privately for the update and serialised it when the
 * update function returned (`run-update.ts`), so nothing the caller does to them reaches the store
 * or another caller; a result's `order` is its `run.openOrder` (one object). Copying them again
 * (structuredClone, as before) bought nothing and cost a deep copy per step.
 *
 * Semantics:
 * - Identity: run id = hash(agent area | instance area | workflow | key), the key derived from
 *   validated input by the workflow's key template; `start` on an existing run attaches to it.
 * - Starting: the run begins in the workflow's initial state. If exactly one valuation of an action
 *   named `START` is enabled there (START without data, or with single-valued data such as a
 *   compiled plan task's fixed vendor), `start` fires it in the same write, so the first order
 *   comes back at once; otherwise the run waits for `signal(START, data)` (e.g. the generic
 *   polly-task, whose START carries one of three vendors).
 * - Orders: a step's emitted effects become orders (id = hash(run, seq, kind, ordinal)) queued in
 *   the run's outbox; one is open at a time. `claim` takes (or renews) a lease; an expired lease
 *   makes the same order claimable again (at least once delivery, same id).
 * - Leases per session: `start`, `report`, `signal` and `state` called with a `session` (an MCP
 *   session's owner id) offer the open order to that session only: it is leased to the session in
 *   the same write (a fresh lease id, `lease_seconds` of the effect, or `leaseSeconds`), renewed
 *   when the same session asks again once half of it has run, and hidden from every other session (`order: null`,
 *   `leasedUntil`) until the lease expires — then the same order id is offered to whoever asks
 *   next. A report carrying a lease id must name the current, unexpired lease; a report from a
 *   session (without a lease id) must come from the holder while the lease runs; either mismatch
 *   is a `stale_lease` / `lease_held` reject. A report with neither (the in-process Brain, which
 *   claimed first) is checked as before. Leases live in the registry, so they survive restarts.
 * - Real data: a report's data is mapped onto the action's checked domain by the workflow's
 *   declared rules (`data-mapping.ts`) before it is applied; the journal keeps the real data
 *   (`run.reported.data`), the mapping (`mapped`) and the payload (`payload`).
 * - Reports: applied exactly once (completed ids are kept). `ok` applies the effect's `on_ok`
 *   action with the report's data; `failure` with `permanent: true` (a denial, red tests, blocking
 *   findings: a result) applies `on_failure` at once; a transient `failure` is retried with
 *   attempt + 1 after `backoff_seconds` while attempts remain, then `on_exhausted`; `exhausted`
 *   applies `on_exhausted` at once. A duplicate, stale or inapplicable report is an observable
 *   reject (`{accepted: false, code, reason}`, journaled as `run.rejected`), never a fault.
 * - Signals: any declared action may be delivered (the checker admitted the workflow for every
 *   action at any time). One that applies and moves the control state (or ends the run) supersedes
 *   the outstanding orders: they are dropped, and reports on them are `stale`.
 *
 * Journal kinds (data always has `run`): `run.started`, `run.action` (the applied, mapped data),
 * `run.order`, `run.claimed` (`owner`, `lease`, `leaseExpiresAt`, `renewed`), `run.reported` (the real
 * `data`, `mapped`, `payload`, `lease`), `run.signal_data` (a signal's real data when mapped or with
 * payload), `run.retry`, `run.rejected`, `run.order_dropped`, `run.lease_expired`, `run.finished`.
 */
import { PollyError, isPollyError } from '../../brain/core/errors.js';
import type { RunRecord, WorkOrderRecord } from './run-records.js';
import type { RunDraft, RunJournalEntry, RunStore, RunStoreTx } from './run-store.js';
import { applyAction, enabledActions, initialState, isTerminal, runKey, validateInput, type RunState, type StepApplied } from './interpreter.js';
import { runIdFor } from './run-identity.js';
import { createOrder, idleInstruction, orderInstruction } from './work-order.js';
import { mapActionData } from './data-mapping.js';
import { randomBytes } from 'node:crypto';
import type { LibraryEntry, WorkflowLibrary } from '../workflow-library.js';
import type { Value, Workflow } from '../workflow-schema.js';

export interface RuntimeDeps {
  /** Where runs live (the registry store satisfies it). */
  store: RunStore;
  library: WorkflowLibrary;
  /** The agent area (a kind of agent: whose workflow library). Part of every run id. */
  agentArea: string;
  /** The instance area (a workspace: whose runs). Part of every run id. */
  instanceArea: string;
  /** Clock for leases, backoff and record times (default: system clock). */
  clock?: () => Date;
  /** Overrides every effect's `lease_seconds` when set (seconds). */
  leaseSeconds?: number;
  /** Largest workflow input accepted by `start`, as UTF-8 JSON bytes (default {@link DEFAULT_MAX_INPUT_BYTES}). */
  maxInputBytes?: number;
  /** Largest report or signal data accepted, as UTF-8 JSON bytes (default {@link DEFAULT_MAX_DATA_BYTES}). */
  maxDataBytes?: number;
}

/** Default limit of a run's input: 64 KiB of JSON (the input is the run's identity and is copied into every order). */
export const DEFAULT_MAX_INPUT_BYTES = 64 * 1024;
/** Default limit of a report's (or signal's) data: 256 KiB of JSON (a raw tool result, journaled once). */
export const DEFAULT_MAX_DATA_BYTES = 256 * 1024;

export type StartStatus = 'started' | 'attached' | 'finished' | 'refused';

/** The outcome of {@link Runtime.start}. `run` is null only when refused. */
export interface StartResult {
  status: StartStatus;
  run: RunRecord | null;
  /** The open order (a retry not yet due is included, with `availableAt`). */
  order: WorkOrderRecord | null;
  /** What the caller should do next, in words. */
  instruction: string;
  /** Refused: why, as a code (`workflow_refused`, `unknown_workflow`, `bad_input`) and the reasons. */
  code?: 'workflow_refused' | 'unknown_workflow' | 'bad_input' | 'too_large';
  reasons?: string[];
  /** With a session: the lease this session holds on `order`, or null. */
  lease?: LeaseGrant | null;
  /** With a session: the open order is leased to another session until this time (and `order` is null). */
  leasedUntil?: string;
}

/** A lease on a work order: quote `id` when reporting it; it lapses at `expiresAt` (ISO-8601). */
export interface LeaseGrant {
  id: string;
  order: string;
  expiresAt: string;
}

/** Who is asking: an MCP session's owner id (e.g. `mcp:<pid>:<hex>`); see the header's lease rules. */
export interface SessionOptions {
  session?: string;
}

/** What an agent reports for an order. */
export interface OrderReport {
  outcome: 'ok' | 'failure' | 'exhausted';
  /** Data of the completion action (e.g. `{count: 2}` for TICKETS_FETCHED). */
  data?: Record<string, unknown>;
  /** Why, in one line (journaled). */
  note?: string;
  /** A failure that is a result (a denial), not a fault: takes `on_failure` at once, no retry. */
  permanent?: boolean;
  /** The attempt being reported; a report for an earlier attempt is `stale`. */
  attempt?: number;
  /** The lease id the order came with; must be the current, unexpired lease (else `stale_lease`). */
  lease?: string;
  /** The reporting session (MCP); without `lease`, it must hold the order's live lease (else `lease_held` / `stale_lease`). */
  session?: string;
}

export type RejectCode = 'stale' | 'stale_lease' | 'lease_held' | 'too_large' | 'duplicate' | 'not_open' | 'not_applicable' | 'bad_data' | 'unknown_action' | 'finished';

export interface Rejected {
  accepted: false;
  reason: string;
  code: RejectCode;
  run: RunRecord;
}

export interface Accepted {
  accepted: true;
  run: RunRecord;
  /** The order now open (the next one, or the same one re-offered for a retry), or null (also when leased to another session). */
  order: WorkOrderRecord | null;
  instruction: string;
  /** With a session: the lease this session now holds on `order`, or null. */
  lease?: LeaseGrant | null;
  leasedUntil?: string;
}

export type StepResult = Accepted | Rejected;

/** A run as seen by {@link Runtime.state}. */
export interface RunView {
  run: RunRecord;
  order: WorkOrderRecord | null;
  instruction: string;
  /** (action, data) pairs a signal could deliver now. */
  enabled: Array<{ action: string; data: Record<string, Value> }>;
  lease?: LeaseGrant | null;
  leasedUntil?: string;
}

export interface Runtime {
  readonly agentArea: string;
  readonly instanceArea: string;
  /** Start or attach (the same call). Never throws for bad input or a refused workflow: `status: 'refused'`. */
  start(workflow: string, input: Record<string, unknown>, options?: SessionOptions): Promise<StartResult>;
  /** Take or renew the lease of the run's open order; null when none is claimable by `owner` now. */
  claim(runId: string, options: { owner: string }): Promise<WorkOrderRecord | null>;
  /** Report an order's outcome (exactly once); with `report.session`, the next order is leased to that session. */
  report(runId: string, orderId: string, report: OrderReport): Promise<StepResult>;
  /** Deliver an action from outside (a human's answer, CANCEL, START with data). */
  signal(runId: string, action: string, data?: Record<string, unknown>, options?: SessionOptions): Promise<StepResult>;
  /**
   * The run, its open order and what to do next. With a session this is a write: the open order is
   * leased to (or renewed for) the session, or hidden while another session holds it.
   * @throws PollyError `not_found`.
   */
  state(runId: string, options?: SessionOptions): Promise<RunView>;
  /** The run's journal lines with seq > `afterSeq`. @throws PollyError `not_found`. */
  journal(runId: string, afterSeq?: number): Promise<RunJournalEntry[]>;
  /** Runs of this runtime's areas (all areas with `allAreas`), oldest first. */
  list(filter?: { workflow?: string; status?: RunRecord['status']; allAreas?: boolean }): Promise<RunRecord[]>;
  /** Clear expired leases of every running run (journaled); the orders stay open, same ids. */
  expireLeases(): Promise<Array<{ run: string; order: string; owner: string | null }>>;
}

function runState(run: RunRecord): RunState {
  return run.state as unknown as RunState;
}

/**
 * Create a runtime over `store` for one agent area and one instance area.
 * Faults (`lock_timeout`, `registry_corrupt`, an unknown run id → `not_found`, a run whose workflow
 * is not in the library → `not_found`) throw PollyError; everything an agent can get wrong is a result.
 */
export function createRuntime(deps: RuntimeDeps): Runtime {
  const { store, library, agentArea, instanceArea } = deps;
  const now = deps.clock ?? (() => new Date());

  function entryFor(run: RunRecord): LibraryEntry & { workflow: Workflow } {
    const e = library.get(run.workflow);
    if (!e?.workflow) {
      throw new PollyError(
        'not_found',
        `run ${run.id} belongs to workflow ${JSON.stringify(run.workflow)}, which this server's library does not hold (${library
          .entries()
          .map((x) => x.name)
          .join(', ')}). Start the server with the library that has it (--agent / --workflows).`,
        { details: { run: run.id, workflow: run.workflow } },
      );
    }
    return e as LibraryEntry & { workflow: Workflow };
  }

  function getRun(draft: RunDraft, runId: string): RunRecord {
    const run = draft.run;
    if (!run)
      throw new PollyError('not_found', `no workflow run ${JSON.stringify(runId)} in this store. Call workflow_start to start or attach (the run id comes back from it).`, {
        details: { run: runId },
      });
    return run;
  }

  function leaseSecondsFor(wf: Workflow, order: WorkOrderRecord): number {
    return deps.leaseSeconds ?? wf.effects.find((e) => e.kind === order.kind)?.retry.lease_seconds ?? 300;
  }

  const maxInputBytes = deps.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const maxDataBytes = deps.maxDataBytes ?? DEFAULT_MAX_DATA_BYTES;
  const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v ?? {}));

  function leaseLive(order: WorkOrderRecord, at: Date): boolean {
    return order.leasedBy !== null && order.leaseExpiresAt !== null && new Date(order.leaseExpiresAt) > at;
  }

  /** Lease (or renew) `order` for `owner` from `at`: a retry not yet due is leased until it is due plus the lease. */
  function grant(run: RunRecord, wf: Workflow, order: WorkOrderRecord, owner: string, tx: RunStoreTx, at: Date): LeaseGrant {
    const renewed = leaseLive(order, at) && order.leasedBy === owner && !!order.leaseId;
    const previous = order.leasedBy;
    const from = Math.max(at.getTime(), order.availableAt ? new Date(order.availableAt).getTime() : 0);
    order.leasedBy = owner;
    if (!renewed) order.leaseId = `lease-${randomBytes(10).toString('hex')}`;
    order.leaseExpiresAt = new Date(from + leaseSecondsFor(wf, order) * 1000).toISOString();
    run.updatedAt = at.toISOString();
    tx.emit('run.claimed', {
      run: run.id,
      order: order.id,
      kind: order.kind,
      owner,
      lease: order.leaseId,
      attempt: order.attempt,
      leaseExpiresAt: order.leaseExpiresAt,
      renewed,
      previousOwner: previous && previous !== owner ? previous : null,
    });
    return { id: order.leaseId!, order: order.id, expiresAt: order.leaseExpiresAt };
  }

  /**
   * What `session` sees of the run's open order: without a session, the order as it is; with one,
   * the order leased to (or renewed for) that session — or nothing while another session's lease runs.
   */
  function offer(
    run: RunRecord,
    wf: Workflow,
    session: string | undefined,
    tx: RunStoreTx,
    at: Date,
  ): { order: WorkOrderRecord | null; lease?: LeaseGrant | null; leasedUntil?: string; instruction: string } {
    const order = run.openOrder;
    if (session === undefined) return { order, instruction: instructionFor(wf, run, at) };
    if (!order || run.status !== 'running') return { order: null, lease: null, instruction: instructionFor(wf, run, at) };
    if (leaseLive(order, at) && order.leasedBy !== session) {
      return {
        order: null,
        lease: null,
        leasedUntil: order.leaseExpiresAt!,
        instruction: `Work order ${order.id} (${order.kind}) of run ${run.id} is leased to another session until ${order.leaseExpiresAt}: do not run its tool. Call workflow_state with run_id "${run.id}" after that time; if that session has not reported by then, the same order is offered to you.`,
      };
    }
    // The holder asking again renews only once half its lease has run (no write on every look).
    const half =
      order.leaseExpiresAt !== null &&
      order.leaseId &&
      order.leasedBy === session &&
      new Date(order.leaseExpiresAt).getTime() - at.getTime() > (leaseSecondsFor(wf, order) * 1000) / 2;
    const lease = half ? { id: order.leaseId!, order: order.id, expiresAt: order.leaseExpiresAt! } : grant(run, wf, order, session, tx, at);
    return {
      order,
      lease,
      instruction: `${instructionFor(wf, run, at)} Quote lease_id "${lease.id}" in that report: the order is leased to you until ${lease.expiresAt}; after that it may be offered to another session and your report is refused.`,
    };
  }

  function instructionFor(wf: Workflow, run: RunRecord, at: Date): string {
    if (run.openOrder) return orderInstruction(wf, run, run.openOrder, at);
    return idleInstruction(wf, run, run.status === 'finished' ? [] : enabledActions(wf, runState(run)));
  }

  /** Open the next queued order when none is open. */
  function promote(run: RunRecord, tx: RunStoreTx): void {
    if (run.openOrder || run.status !== 'running') return;
    const next = run.outbox?.shift();
    if (!next) return;
    run.openOrder = next;
    tx.emit('run.order', { run: run.id, order: next.id, kind: next.kind, tool: next.tool, attempt: next.attempt, seq: next.seq ?? null });
  }

  function dropOutstanding(run: RunRecord, tx: RunStoreTx, why: string): void {
    const outstanding = [...(run.openOrder ? [run.openOrder] : []), ...(run.outbox ?? [])];
    for (const o of outstanding) {
      run.droppedOrders = [...(run.droppedOrders ?? []), o.id];
      tx.emit('run.order_dropped', { run: run.id, order: o.id, kind: o.kind, why });
    }
    run.openOrder = null;
    run.outbox = [];
  }

  /** Commit an applied step: state, seq, new orders, finish. */
  function commitStep(run: RunRecord, wf: Workflow, action: string, data: Record<string, unknown>, step: StepApplied, tx: RunStoreTx, cause: string, at: Date): void {
    const from = runState(run).state;
    run.seq += 1;
    run.state = step.state as unknown as Record<string, unknown>;
    run.updatedAt = at.toISOString();
    const orders = step.emitted.map((e, i) => createOrder(run, e, run.seq, i));
    tx.emit('run.action', { run: run.id, action, data, from, to: step.state.state, seq: run.seq, emitted: step.emitted.map((e) => e.kind), cause });
    if (isTerminal(wf, step.state)) {
      dropOutstanding(run, tx, `the run ended in ${step.state.state}`);
      for (const o of orders) {
        run.droppedOrders = [...(run.droppedOrders ?? []), o.id];
        tx.emit('run.order_dropped', { run: run.id, order: o.id, kind: o.kind, why: `emitted by the final step into ${step.state.state}` });
      }
      run.status = 'finished';
      run.outcome = step.state.state;
      tx.emit('run.finished', { run: run.id, workflow: run.workflow, key: run.key, state: step.state.state });
      return;
    }
    run.outbox = [...(run.outbox ?? []), ...orders];
    promote(run, tx);
  }

  function reject(run: RunRecord, tx: RunStoreTx, code: RejectCode, reason: string, extra: Record<string, unknown>): Rejected {
    tx.emit('run.rejected', { run: run.id, code, reason, ...extra });
    return { accepted: false, code, reason, run };
  }

  function accepted(run: RunRecord, wf: Workflow, at: Date, session: string | undefined, tx: RunStoreTx): Accepted {
    const seen = offer(run, wf, session, tx, at);
    return { accepted: true, ...seen, run };
  }

  /** The action's data mapped onto its checked domain (see data-mapping.ts); unknown actions pass through. */
  function mapFor(wf: Workflow, action: string, real: Record<string, unknown>) {
    const decl = wf.actions.find((a) => a.name === action);
    return decl ? mapActionData(decl, real) : { data: real, mapped: {}, payload: null };
  }

  const runtime: Runtime = {
    agentArea,
    instanceArea,

    async start(workflow, input, options = {}) {
      const entry = library.get(workflow);
      if (!entry) {
        const names = library
          .entries()
          .filter((e) => e.admitted)
          .map((e) => e.name);
        return {
          status: 'refused',
          run: null,
          order: null,
          code: 'unknown_workflow',
          reasons: [`no workflow named ${JSON.stringify(workflow)}`],
          instruction: `There is no workflow named ${JSON.stringify(workflow)} in this agent area. Admitted workflows: ${names.join(', ') || 'none'}. Call workflow_list and start one of those.`,
        };
      }
      if (!entry.admitted || !entry.workflow) {
        return {
          status: 'refused',
          run: null,
          order: null,
          code: 'workflow_refused',
          reasons: entry.reasons,
          instruction: `Workflow ${entry.name} was REFUSED at admission and cannot be started: it violates ${entry.reasons.join(', ')}. Do not try to perform its steps yourself. Use an admitted workflow (workflow_list), or fix the workflow and restart the server.`,
        };
      }
      const wf = entry.workflow;
      const inputBytes = jsonBytes(input);
      if (inputBytes > maxInputBytes) {
        const why = `the input is ${inputBytes} bytes of JSON, over this server's limit of ${maxInputBytes} bytes`;
        return {
          status: 'refused',
          run: null,
          order: null,
          code: 'too_large',
          reasons: [why],
          instruction: `Refused: ${why}. Nothing was started. The input is the run's identity (key ${wf.key ?? 'none'}) and goes into every work order: pass short identifiers, not content.`,
        };
      }
      let key: string;
      let valid: Record<string, Value>;
      try {
        valid = validateInput(wf, input ?? {});
        key = runKey(wf, valid);
      } catch (error) {
        if (!isPollyError(error, 'bad_input')) throw error;
        const fields = wf.input.map((f) => `${f.name} (${f.type}${f.pattern ? ` matching /${f.pattern}/` : ''})`).join(', ');
        return {
          status: 'refused',
          run: null,
          order: null,
          code: 'bad_input',
          reasons: [error.message],
          instruction: `${error.message} Nothing was started. The run key (${wf.key ?? 'none'}) is derived from the input, so the input must be valid: pass exactly ${fields || 'no fields'}.`,
        };
      }
      const id = runIdFor(agentArea, instanceArea, wf.name, key);
      return store.updateRun(id, (draft, tx) => {
        const at = now();
        const existing = draft.run;
        if (existing) {
          const status: StartStatus = existing.status === 'finished' ? 'finished' : 'attached';
          const seen = offer(existing, wf, options.session, tx, at);
          return { status, ...seen, run: existing };
        }
        const run: RunRecord = {
          id,
          agentArea,
          instanceArea,
          workflow: wf.name,
          key,
          input: { ...valid },
          state: initialState(wf, valid) as unknown as Record<string, unknown>,
          seq: 0,
          status: 'running',
          openOrder: null,
          completedOrders: [],
          outbox: [],
          droppedOrders: [],
          outcome: null,
          createdAt: at.toISOString(),
          updatedAt: at.toISOString(),
        };
        draft.run = run;
        tx.emit('run.started', { run: id, workflow: wf.name, key, agentArea, instanceArea, input: run.input });
        const starts = enabledActions(wf, runState(run)).filter((e) => e.action === 'START');
        if (starts.length === 1) {
          const only = starts[0]!.data;
          const step = applyAction(wf, runState(run), 'START', only);
          if ('state' in step) commitStep(run, wf, 'START', only, step, tx, 'start', at);
        }
        const seen = offer(run, wf, options.session, tx, at);
        return { status: 'started' as const, ...seen, run };
      });
    },

    async claim(runId, { owner }) {
      if (!owner) throw new PollyError('bad_input', 'claim needs an owner (who holds the lease), e.g. "brain:1234".');
      return store.updateRun(runId, (draft, tx) => {
        const run = getRun(draft, runId);
        const order = run.openOrder;
        if (run.status !== 'running' || !order) return null;
        const at = now();
        if (order.availableAt && new Date(order.availableAt) > at) return null;
        const held = order.leasedBy !== null && order.leaseExpiresAt !== null && new Date(order.leaseExpiresAt) > at;
        if (held && order.leasedBy !== owner) return null;
        grant(run, entryFor(run).workflow, order, owner, tx, at);
        return order;
      });
    },

    async report(runId, orderId, report) {
      return store.updateRun(runId, (draft, tx) => {
        const run = getRun(draft, runId);
        const wf = entryFor(run).workflow;
        const at = now();
        const ctx = { order: orderId, outcome: report.outcome };
        if (run.completedOrders.includes(orderId)) {
          return reject(
            run,
            tx,
            'duplicate',
            `order ${orderId} was already reported and its completion applied; this report changes nothing (completions apply exactly once).`,
            ctx,
          );
        }
        const open = run.openOrder;
        if (!open || open.id !== orderId) {
          if (run.droppedOrders?.includes(orderId))
            return reject(
              run,
              tx,
              'stale',
              `order ${orderId} was superseded (the run moved on or ended) before it was reported; nothing was applied. ${instructionFor(wf, run, at)}`,
              ctx,
            );
          if (run.outbox?.some((o) => o.id === orderId))
            return reject(
              run,
              tx,
              'not_open',
              `order ${orderId} is queued behind the open order ${open?.id ?? '(none)'} and has not been offered yet; report the open order first.`,
              ctx,
            );
          if (run.status === 'finished') return reject(run, tx, 'finished', `run ${run.id} has finished in ${run.outcome}; order ${orderId} is not one of its orders.`, ctx);
          return reject(
            run,
            tx,
            'not_open',
            `order ${orderId} is not open in run ${run.id}${open ? ` (the open order is ${open.id})` : ' (no order is open)'}. ${instructionFor(wf, run, at)}`,
            ctx,
          );
        }
        if (report.attempt !== undefined && report.attempt !== open.attempt) {
          return reject(run, tx, 'stale', `the report is for attempt ${report.attempt} of order ${orderId}, which is now at attempt ${open.attempt}; nothing was applied.`, {
            ...ctx,
            attempt: report.attempt,
          });
        }
        const live = leaseLive(open, at);
        if (report.lease !== undefined && (report.lease !== open.leaseId || !live)) {
          const why =
            report.lease !== open.leaseId
              ? `lease ${report.lease} is not the order's current lease${open.leaseId ? ` (the order was re-offered${live ? ` and is leased until ${open.leaseExpiresAt}` : ''})` : ''}`
              : `lease ${report.lease} lapsed at ${open.leaseExpiresAt}`;
          return reject(
            run,
            tx,
            'stale_lease',
            `${why}; nothing was applied. Do not run the order's tool again on this lease: call workflow_state for run ${run.id} to see whether the order is offered to you again.`,
            { ...ctx, lease: report.lease, session: report.session ?? null },
          );
        }
        if (report.lease === undefined && report.session !== undefined) {
          if (live && open.leasedBy !== report.session) {
            return reject(
              run,
              tx,
              'lease_held',
              `order ${orderId} is leased to another session until ${open.leaseExpiresAt}; only its holder may report it. Nothing was applied. Call workflow_state for run ${run.id} after that time.`,
              { ...ctx, session: report.session },
            );
          }
          if (!live && open.leasedBy === report.session) {
            return reject(
              run,
              tx,
              'stale_lease',
              `your lease on order ${orderId} lapsed at ${open.leaseExpiresAt}; nothing was applied. Call workflow_state for run ${run.id}: the order is offered again to whoever asks first.`,
              { ...ctx, session: report.session },
            );
          }
        }
        const dataBytes = jsonBytes(report.data);
        if (dataBytes > maxDataBytes) {
          return reject(
            run,
            tx,
            'too_large',
            `the report's data is ${dataBytes} bytes of JSON, over this server's limit of ${maxDataBytes} bytes; nothing was applied and the order stays open. Report the fields the order asks for (and a short summary), not whole documents.`,
            { ...ctx, bytes: dataBytes },
          );
        }
        const effect = wf.effects.find((e) => e.kind === open.kind);
        if (!effect) throw new PollyError('internal', `order ${open.id} has kind ${open.kind}, which workflow ${wf.name} does not declare`);
        let action: string | null;
        if (report.outcome === 'ok') {
          action = effect.on_ok;
        } else if (report.outcome === 'exhausted') {
          action = effect.on_exhausted ?? effect.on_failure;
        } else if (report.permanent) {
          action = effect.on_failure;
        } else if (open.attempt < effect.retry.max_attempts) {
          open.attempt += 1;
          open.leasedBy = null;
          open.leaseExpiresAt = null;
          open.leaseId = null;
          open.availableAt = new Date(at.getTime() + effect.retry.backoff_seconds * 1000).toISOString();
          run.updatedAt = at.toISOString();
          tx.emit('run.reported', { run: run.id, order: open.id, kind: open.kind, outcome: 'failure', permanent: false, note: report.note ?? null, applied: null });
          tx.emit('run.retry', { run: run.id, order: open.id, attempt: open.attempt, availableAt: open.availableAt });
          return accepted(run, wf, at, report.session, tx);
        } else {
          action = effect.on_exhausted ?? effect.on_failure;
        }
        if (action === null) throw new PollyError('internal', `effect ${effect.kind} of ${wf.name} has no completion for outcome ${report.outcome}`);
        const real = report.data ?? {};
        const mapping = mapFor(wf, action, real);
        const step = applyAction(wf, runState(run), action, mapping.data);
        if ('rejected' in step) {
          const code: RejectCode = step.code === 'bad_data' ? 'bad_data' : 'not_applicable';
          return reject(
            run,
            tx,
            code,
            `report of ${orderId} (${report.outcome} → ${action}) was not applied: ${step.rejected}. The order stays open; report again with valid data.`,
            { ...ctx, action, data: real },
          );
        }
        run.completedOrders.push(orderId);
        run.openOrder = null;
        tx.emit('run.reported', {
          run: run.id,
          order: open.id,
          kind: open.kind,
          outcome: report.outcome,
          permanent: report.permanent === true,
          note: report.note ?? null,
          applied: action,
          attempt: open.attempt,
          data: real,
          mapped: mapping.mapped,
          payload: mapping.payload,
          lease: open.leaseId ?? null,
        });
        commitStep(run, wf, action, mapping.data, step, tx, `report:${orderId}`, at);
        return accepted(run, wf, at, report.session, tx);
      });
    },

    async signal(runId, action, data = {}, options = {}) {
      return store.updateRun(runId, (draft, tx) => {
        const run = getRun(draft, runId);
        const wf = entryFor(run).workflow;
        const at = now();
        if (run.status === 'finished')
          return reject(run, tx, 'finished', `run ${run.id} has finished in ${run.outcome}; ${action} does not apply to a finished run. Do not start another run for this key.`, {
            action,
            data,
          });
        const dataBytes = jsonBytes(data);
        if (dataBytes > maxDataBytes)
          return reject(run, tx, 'too_large', `the signal's data is ${dataBytes} bytes of JSON, over this server's limit of ${maxDataBytes} bytes; nothing changed.`, {
            action,
            bytes: dataBytes,
          });
        const mapping = wf.actions.some((a) => a.name === action) ? mapFor(wf, action, data) : { data, mapped: {}, payload: null };
        const step = applyAction(wf, runState(run), action, mapping.data);
        if ('rejected' in step) {
          const code: RejectCode = step.code === 'unknown_action' ? 'unknown_action' : step.code === 'bad_data' ? 'bad_data' : 'not_applicable';
          return reject(run, tx, code, `${step.rejected}; nothing changed. ${instructionFor(wf, run, at)}`, { action, data });
        }
        if (step.state.state !== runState(run).state && !isTerminal(wf, step.state)) dropOutstanding(run, tx, `signal ${action} moved the run to ${step.state.state}`);
        if (Object.keys(mapping.mapped).length > 0 || mapping.payload) tx.emit('run.signal_data', { run: run.id, action, data, mapped: mapping.mapped, payload: mapping.payload });
        commitStep(run, wf, action, mapping.data, step, tx, 'signal', at);
        return accepted(run, wf, at, options.session, tx);
      });
    },

    async state(runId, options = {}) {
      if (options.session === undefined) {
        const run = getRun({ run: await store.getRun(runId) }, runId);
        const wf = entryFor(run).workflow;
        return { run, order: run.openOrder, instruction: instructionFor(wf, run, now()), enabled: run.status === 'finished' ? [] : enabledActions(wf, runState(run)) };
      }
      return store.updateRun(runId, (draft, tx) => {
        const run = getRun(draft, runId);
        const wf = entryFor(run).workflow;
        const seen = offer(run, wf, options.session, tx, now());
        return { ...seen, run, enabled: run.status === 'finished' ? [] : enabledActions(wf, runState(run)) };
      });
    },

    async journal(runId, afterSeq = 0) {
      getRun({ run: await store.getRun(runId) }, runId);
      return store.journal(afterSeq, { run: runId });
    },

    async list(filter = {}) {
      return (await store.listRuns(filter.status ? { status: filter.status } : {}))
        .filter((r) => filter.allAreas || (r.agentArea === agentArea && r.instanceArea === instanceArea))
        .filter((r) => !filter.workflow || r.workflow === filter.workflow)
        .filter((r) => !filter.status || r.status === filter.status)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    },

    async expireLeases() {
      const at = now();
      const expired = (r: RunRecord): boolean => {
        const o = r.openOrder;
        return r.status === 'running' && o !== null && o.leaseExpiresAt !== null && new Date(o.leaseExpiresAt) <= at;
      };
      // Candidates from a snapshot of the live runs, each re-checked inside its own update (another process may have moved it).
      const candidates = (await store.listRuns({ status: 'running' })).filter(expired);
      const results = await Promise.all(
        candidates.map((c) =>
          store.updateRun(c.id, (draft, tx) => {
            const run = draft.run;
            if (!run || !expired(run)) return null;
            const o = run.openOrder!;
            tx.emit('run.lease_expired', { run: run.id, order: o.id, owner: o.leasedBy, expiredAt: o.leaseExpiresAt });
            const out = { run: run.id, order: o.id, owner: o.leasedBy };
            o.leasedBy = null;
            o.leaseExpiresAt = null;
            o.leaseId = null;
            return out;
          }),
        ),
      );
      return results.filter((r): r is { run: string; order: string; owner: string | null } => r !== null);
    },
  };
  return runtime;
}
