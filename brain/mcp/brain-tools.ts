/**
 * The Brain's dispatch protocol as MCP tools: `sys_session_send`,
 * `sys_read_inbox`, `sys_cancel_task`, `plan_propose`, and `polly_status` (read access to the
 * registry). Served by `polly mcp` next to the workflow tools, and used by the LLM brain that
 * `polly goal` starts.
 *
 * These tools only write the registry (and journal); the Brain process (brain/brain-process.ts)
 * reacts to what they record: it runs queued workers, stops cancelled tasks, and dispatches the
 * tasks of approved plans. So the tools are safe to call from any MCP host process.
 */
import { z } from 'zod';
import { decide } from '../../gate/decide.js';
import type { DispatchRequest, GateContext } from '../../gate/types.js';
import type { PollyConfig } from '../config/config-schema.js';
import { defineTool, READ_ONLY, type PollyToolDefinition } from './mcp-server.js';
import { proposePlan } from '../plan/plan-gate.js';
import { planSchema, planTaskSchema } from '../plan/plan-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { TaskRecord } from '../registry/registry-schema.js';
import { statusReport } from '../registry/status-report.js';
import { newTaskRecord } from '../registry/task-record.js';
import { resolvePlanBudgets } from '../plan/budgets.js';
import { HARNESSES } from '../core/vocabulary.js';
import { toInboxEvents, type InboxEvent } from './inbox-events.js';

export interface BrainToolsDeps {
  store: RegistryStore;
  config: PollyConfig;
  /** The gate's context for dispatch decisions (the Brain's own checkout). */
  gateContext: GateContext;
  now?: () => Date;
  /** Longest sys_read_inbox wait in seconds (default 600). */
  maxWaitSeconds?: number;
  /** The goal this Brain session serves: plan_propose's default `goal_id`. */
  goalId?: string | null;
}

/** Build the Brain's tools over a registry store. */
export function createBrainTools(deps: BrainToolsDeps): PollyToolDefinition[] {
  const now = deps.now ?? (() => new Date());
  const maxWait = deps.maxWaitSeconds ?? 600;

  const sessionSend = defineTool({
    name: 'sys_session_send',
    title: 'Dispatch a worker',
    description:
      'Dispatch one worker session: title, purpose (implement | review | explore | search), model, and the prompt. ' +
      "Every dispatch passes Polly's gate (purpose_guard, spawn_bounds: at most 5 per turn). Read-only purposes (explore, search, review) run at once; " +
      'implement work is dispatched by Polly itself from an approved plan (propose one with plan_propose). ' +
      'The result arrives in your inbox: call sys_read_inbox to wait for it.',
    inputSchema: {
      title: z.string().min(1).describe('short task title'),
      purpose: z.string().describe('implement | review | explore | search'),
      model: z.string().optional().describe('model for the worker (optional)'),
      worker: z.enum(HARNESSES).optional().describe('which agent CLI runs it (default: pi for read-only work, claude-code otherwise)'),
      prompt: z.string().min(1).describe('what the worker should do'),
    },
    // Queues a new task each call; the worker it starts is a coding agent that reaches its model's API and, for explore/search, the web.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    async handler(args) {
      const at = now().toISOString();
      return deps.store.update((draft, tx) => {
        const dispatchesThisTurn = draft.turn?.dispatches ?? 0;
        const request: DispatchRequest = { type: 'dispatch', purpose: args.purpose, model: args.model ?? null, dispatchesThisTurn, source: 'brain' };
        const decision = decide(request, deps.config.policies, deps.gateContext);
        tx.emit('gate.decision', { request, role: 'brain', ...decision });
        if (decision.decision !== 'allow') {
          return { structured: { dispatched: false, decision }, instruction: `Denied by the gate (${decision.rule}): ${decision.reason}.` };
        }
        draft.counters.task += 1;
        const id = `x${draft.counters.task}`;
        const worker = args.worker ?? 'pi';
        draft.tasks[id] = newTaskRecord(
          {
            id,
            planId: null,
            title: args.title,
            purpose: args.purpose as TaskRecord['purpose'],
            worker,
            model: args.model ?? null,
            reviewer: null,
            prompt: args.prompt,
            acceptance: { commands: [], criteria: [] },
            dependsOn: [],
          },
          at,
        );
        // Outside a plan there is no approved budget: config budgets.per_task is the limit in force
        // (resolved now, as a plan's is at proposal), enforced by the read-only runner. No goal limit:
        // an ad-hoc task belongs to no plan, and a goal's spending is summed over its plans' tasks.
        const budget = resolvePlanBudgets(deps.config, null).perTask;
        if (budget) draft.tasks[id]!.budget = budget;
        draft.turn = { seq: draft.turn?.seq ?? 0, startedAt: draft.turn?.startedAt ?? at, dispatches: dispatchesThisTurn + 1 };
        tx.emit('task.queued', { taskId: id, purpose: args.purpose, worker, title: args.title });
        return {
          structured: { dispatched: true, task_id: id, decision },
          instruction: `Dispatched ${args.purpose} task ${id} to ${worker}. Its result will arrive in your inbox: call sys_read_inbox (it blocks until an event arrives).`,
        };
      });
    },
  });

  const readInbox = defineTool({
    name: 'sys_read_inbox',
    title: 'Read the inbox',
    description:
      'Structured results from workers, reviews, PRs and the plan gate, oldest first. Blocks until at least one event arrives or wait_s passes (event-driven: never poll in a loop). ' +
      'Without a cursor it continues where the last read stopped.',
    inputSchema: {
      cursor: z.number().int().min(0).optional().describe('return events after this journal seq (default: after the last read)'),
      wait_s: z.number().min(0).optional().describe(`seconds to wait for an event (default 60, at most ${maxWait})`),
    },
    // Without a cursor it moves the inbox cursor on, so the same call twice returns different events.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler(args) {
      const reg = await deps.store.read();
      const cursor = args.cursor ?? reg.inboxCursor ?? 0;
      const waitMs = Math.min(args.wait_s ?? 60, maxWait) * 1000;
      const deadline = Date.now() + waitMs;
      let after = cursor;
      let events: InboxEvent[] = [];
      for (;;) {
        const entries = await deps.store.journal(after);
        events = toInboxEvents(entries);
        if (entries.length) after = entries[entries.length - 1]!.seq;
        if (events.length > 0) break;
        const left = deadline - Date.now();
        if (left <= 0) break;
        const more = await deps.store.waitForJournal(after, left);
        if (more.length === 0) break;
      }
      const next = events.length ? events[events.length - 1]!.seq : after;
      if (args.cursor === undefined || next > (reg.inboxCursor ?? 0)) {
        await deps.store.update((draft) => {
          if ((draft.inboxCursor ?? 0) < next) draft.inboxCursor = next;
        });
      }
      return {
        structured: { events, cursor: next },
        instruction: events.length
          ? `${events.length} event(s). Integrate them; call sys_read_inbox again to wait for more.`
          : 'No new events yet. Call sys_read_inbox again to keep waiting, or end your turn: Polly wakes you when something happens.',
      };
    },
  });

  const cancelTask = defineTool({
    name: 'sys_cancel_task',
    title: 'Cancel a task',
    description:
      'Stop a task: its worker process group is killed and its work is kept in a backup ref under refs/polly/backup/ (nothing is deleted). The confirmation arrives in your inbox.',
    inputSchema: { task_id: z.string().min(1) },
    // Kills the task's worker (its work is kept in a backup ref); cancelling a cancelled task changes nothing.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handler(args) {
      return deps.store.update((draft, tx) => {
        const task = draft.tasks[args.task_id];
        if (!task) return { structured: { cancelled: false, reason: `no task "${args.task_id}"` }, instruction: `No task "${args.task_id}"; see polly_status for the ids.` };
        if (['done', 'merged', 'cancelled', 'failed'].includes(task.status)) {
          return {
            structured: { cancelled: false, reason: `task ${task.id} already ${task.status}` },
            instruction: `Task ${task.id} is already ${task.status}; nothing to cancel.`,
          };
        }
        task.cancelRequested = true;
        task.updatedAt = now().toISOString();
        tx.emit('task.cancel_requested', { taskId: task.id });
        return {
          structured: { cancelled: true, task_id: task.id },
          instruction: `Cancelling ${task.id}: Polly stops its worker and keeps its work in a backup ref. The confirmation arrives in your inbox.`,
        };
      });
    },
  });

  const propose = defineTool({
    name: 'plan_propose',
    title: 'Propose a plan',
    description:
      'Propose the plan for the goal: tasks with key, title, purpose, worker (claude-code | codex | pi), reviewer (another vendor), prompt, acceptance {commands, criteria, known_red: the project checks this task is meant to make pass, when they are red on the base now}, depends_on, paths (git globs of the only files the task may change, from your investigation, e.g. ["src/api/**", "test/api.test.ts"]; tasks whose paths overlap must be ordered with depends_on). ' +
      'Polly compiles it into workflows and model-checks them with its guarantees (never merge, never force-push, PRs only after green tests and a clean review, reviewer vendor differs, at most 5 dispatches per turn, every path terminates, tasks with overlapping paths never run at the same time). ' +
      'REFUSED → you get the violated invariants and their shortest counterexamples: revise and propose again. Admitted → it waits for a human at the plan gate.',
    inputSchema: {
      goal_id: z.string().optional().describe('the goal this plan serves (from your first message)'),
      tasks: z.array(planTaskSchema).min(1),
      budgets: planSchema.shape.budgets.describe("optional hard budgets {per_task, per_goal} of {usd, tokens} over the config's; a task may set its own budget"),
    },
    // Each call records a new plan (admitted or refused); nothing runs before a human approves it at the plan gate.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler(args) {
      const result = await proposePlan(
        deps.store,
        deps.config,
        { tasks: args.tasks, ...(args.budgets ? { budgets: args.budgets } : {}) },
        { goalId: args.goal_id ?? deps.goalId ?? null, now },
      );
      return {
        structured: { plan_id: result.planId, admitted: result.admitted, line: result.line, counterexamples: result.counterexamples },
        instruction: `${result.line}\n${result.counterexamples.join('\n')}${result.counterexamples.length ? '\n' : ''}${result.instruction}`,
      };
    },
  });

  const status = defineTool({
    name: 'polly_status',
    title: 'Registry status',
    description: 'Read the registry: goals, plans (admission and gate), tasks (status, worker, reviewer, branch, PR) and live workers.',
    inputSchema: {},
    annotations: READ_ONLY,
    async handler() {
      const report = statusReport(deps.gateContext.repoRoot, await deps.store.read());
      return { structured: report as unknown as Record<string, unknown> };
    },
  });

  return [sessionSend, readInbox, cancelTask, propose, status] as unknown as PollyToolDefinition[];
}
