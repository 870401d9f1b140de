/**
 * Polly's MCP server: the durable workflow runtime as MCP tools (the polyflow tool names), plus
 * any extra tools a caller plugs in (the Brain's `sys_session_send`, `sys_read_inbox`,
 * `sys_cancel_task`, `plan_propose`, registry reads) as {@link PollyToolDefinition}s.
 *
 * Built on @modelcontextprotocol/sdk 1.32 `McpServer.registerTool` with zod input and output
 * schemas. Every result carries `structuredContent` (validated by the SDK against the output
 * schema) and one text block: the instruction first, then the JSON. The instruction is also a
 * field of the structured result: claude 2.1 shows the model `structuredContent` (not the text)
 * when a tool returns it. Outcomes an agent can cause — a refused workflow, a stale or duplicate report, an action
 * that does not apply — are ordinary results with an instruction; only faults (an unknown run id,
 * a broken registry) come back as `isError: true` (the SDK turns a thrown error into that).
 *
 * Every tool's arguments are a strict object (`additionalProperties: false` in the listed schema,
 * and enforced: an unknown argument is an `isError` result naming it). Each server is one MCP
 * session with its own owner id (`mcp:<pid>:<hex>`): work orders it is handed are leased to it
 * (`lease` in the result; quote `lease_id` when reporting) and hidden from other sessions until
 * the lease lapses (see workflows/run/runtime.ts).
 *
 * polyflow compatibility (aliases, so an agent prompt written for polyflow works unchanged):
 * `instance` = `run_id` (every tool that takes a run); in `workflow_report`, `ok: true` = outcome
 * "ok", `ok: false` = outcome "failure", `result` = `data`, and `order_id` may be left out (the
 * run's open order is meant; the lease rules still apply). Passing both names of a pair is refused.
 */
import { randomBytes } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PollyError } from '../core/errors.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z, type ZodRawShape, type ZodTypeAny } from 'zod';
import type { Runtime } from '../../workflows/run/runtime.js';
import type { WorkflowLibrary } from '../../workflows/workflow-library.js';

/** What a tool handler returns: the structured result, and optionally the instruction shown first. */
export interface PollyToolResult {
  structured: Record<string, unknown>;
  /** One line for the model, shown before the JSON (e.g. the next work order). */
  instruction?: string;
  /** A fault the model should see as a tool error. */
  isError?: boolean;
}

/**
 * A tool the server exposes. `inputSchema` / `outputSchema` are zod raw shapes (the SDK validates
 * arguments before `handler` runs and `structured` after it returns).
 */
export interface PollyToolDefinition<S extends ZodRawShape = ZodRawShape> {
  name: string;
  title?: string;
  /** Tells the model what the tool does and what to do next. */
  description: string;
  inputSchema: S;
  outputSchema?: ZodRawShape;
  annotations?: ToolAnnotations;
  handler(args: z.objectOutputType<S, ZodTypeAny>): Promise<PollyToolResult>;
}

/** Define a tool with its argument types inferred from `inputSchema`. */
export function defineTool<S extends ZodRawShape>(def: PollyToolDefinition<S>): PollyToolDefinition<S> {
  return def;
}

export interface PollyMcpServerDeps {
  runtime: Runtime;
  library: WorkflowLibrary;
  /** More tools (e.g. the Brain's); a name clash with a workflow tool throws at creation. */
  extraTools?: PollyToolDefinition[];
  /** Server name announced at initialize (default `polly`) and version (default `0.1.0`). */
  name?: string;
  version?: string;
  /** This session's owner id for leases (default `mcp:<pid>:<random hex>`). */
  session?: string;
}

/** A new MCP session owner id: `mcp:<pid>:<12 hex>`. */
export function newSessionId(): string {
  return `mcp:${process.pid}:${randomBytes(6).toString('hex')}`;
}

/**
 * The run id from `run_id` or its polyflow alias `instance` (one of them; both only when equal).
 * @throws PollyError `bad_input` naming both when they differ, or saying what to pass when neither is given
 *         (the SDK returns it to the caller as an `isError` result).
 */
function runIdOf(a: { run_id?: string; instance?: string }): string {
  if (a.run_id !== undefined && a.instance !== undefined && a.run_id !== a.instance)
    throw new PollyError(
      'bad_input',
      `pass the run as run_id or as instance (polyflow's name), not both with different values (run_id ${JSON.stringify(a.run_id)}, instance ${JSON.stringify(a.instance)}).`,
    );
  const id = a.run_id ?? a.instance;
  if (id === undefined) throw new PollyError('bad_input', 'missing run_id (or its polyflow alias instance): pass the run id workflow_start returned.');
  return id;
}

const runArgs = {
  run_id: z.string().optional().describe('the run id workflow_start returned'),
  instance: z.string().optional().describe("polyflow's name for run_id"),
};
const leaseShape = z.object({ id: z.string(), order: z.string(), expiresAt: z.string() }).nullable().optional();

const record = z.record(z.unknown());
const anyObject = z.object({}).passthrough();
const nullableObject = anyObject.nullable();
/** The answer of a call that may be refused (workflow_report, workflow_signal): accepted or a code and reason. */
const acceptanceShape = {
  accepted: z.boolean(),
  run: anyObject,
  order: nullableObject.optional(),
  instruction: z.string().optional(),
  code: z.string().optional(),
  reason: z.string().optional(),
  lease: leaseShape,
  leasedUntil: z.string().optional(),
};

/** The startup lines on stderr, one per workflow (the checker's verdict lines, workflows/check/checker.ts): `[polly] admitted: NAME — …` or `[polly] REFUSED: NAME` + `[polly]   invariant`. */
export function admissionLines(library: WorkflowLibrary): string[] {
  const out: string[] = [];
  for (const e of library.entries()) {
    out.push(`[polly] ${e.line}`);
    if (!e.admitted) for (const r of e.reasons) out.push(`[polly]   ${r.split('\n')[0]}`);
  }
  return out;
}

/** The six workflow tools over `runtime` and `library`, for one MCP session (`session`: its lease owner id). */
export function workflowTools(runtime: Runtime, library: WorkflowLibrary, session: string = newSessionId()): PollyToolDefinition[] {
  const list = defineTool({
    name: 'workflow_list',
    title: 'List workflows',
    description:
      'List the workflows you can run here. Each admitted workflow was model-checked: it comes with the guarantees it was admitted under, ' +
      'the tools its work orders will ask you to run, and its key template (the run identity, derived from the input). Refused workflows are listed with the violated invariants and cannot be started. ' +
      "Next: pick the admitted workflow that covers the user's task and call workflow_start with its input.",
    inputSchema: {},
    outputSchema: { workflows: z.array(anyObject), agentArea: z.string(), instanceArea: z.string(), instruction: z.string().optional() },
    annotations: { readOnlyHint: true },
    async handler() {
      const workflows = library.entries().map((e) => ({
        name: e.name,
        admitted: e.admitted,
        description: e.description,
        line: e.line,
        guarantees: e.admitted ? e.guarantees : [],
        refusedBecause: e.admitted ? [] : e.reasons,
        tools: e.tools,
        keyTemplate: e.key,
        input: e.workflow ? e.workflow.input.map((f) => ({ name: f.name, type: f.type, pattern: f.pattern })) : [],
        pathsExplored: e.check?.pathsExplored ?? 0,
        statesSeen: e.check?.statesSeen ?? 0,
      }));
      const admitted = workflows.filter((w) => w.admitted).map((w) => w.name);
      return {
        structured: { workflows, agentArea: runtime.agentArea, instanceArea: runtime.instanceArea },
        instruction: `Admitted: ${admitted.join(', ') || 'none'}. Start one with workflow_start {workflow, input}.`,
      };
    },
  });

  const start = defineTool({
    name: 'workflow_start',
    title: 'Start or attach to a workflow run',
    description:
      "Start a run of an admitted workflow, or attach to the run already in progress for the same input: the run key is derived from the input by the workflow's key template, never chosen by you, so calling this again is safe. " +
      'It returns the one open work order: run that tool yourself, under your own permissions, then call workflow_report. ' +
      'A refused workflow cannot be started (the result says why); invalid input is refused with what to pass; a finished run says so — do not start another.',
    inputSchema: { workflow: z.string().describe('workflow name from workflow_list'), input: record.default({}).describe("the workflow's input fields (see workflow_list)") },
    outputSchema: {
      status: z.enum(['started', 'attached', 'finished', 'refused']),
      run: nullableObject,
      order: nullableObject,
      instruction: z.string(),
      code: z.string().optional(),
      reasons: z.array(z.string()).optional(),
      lease: leaseShape,
      leasedUntil: z.string().optional(),
    },
    async handler({ workflow, input }) {
      const r = await runtime.start(workflow, input, { session });
      return { structured: { ...r }, instruction: r.instruction };
    },
  });

  const report = defineTool({
    name: 'workflow_report',
    title: 'Report a work order',
    description:
      'Report the outcome of the open work order, exactly once: outcome "ok" with the data the order asked for; "failure" with permanent: true when the failure is a result (a human denied, a refusal) — the workflow takes its failure branch; ' +
      '"failure" without permanent for a transient fault (it is re-offered while attempts remain). The result holds the next work order (run it, then report it) or says the run finished. ' +
      'A duplicate or stale report is refused and changes nothing. Quote the lease_id the order came with: once the lease lapses the order may go to another session, and a report on the old lease is refused (stale_lease). ' +
      "polyflow names are accepted too: instance for run_id, ok (true/false) for outcome, result for data; order_id may be omitted for the run's open order.",
    inputSchema: {
      ...runArgs,
      order_id: z.string().optional().describe("the work order id (default: the run's open order)"),
      lease_id: z.string().optional().describe('the lease id the order came with'),
      outcome: z.enum(['ok', 'failure', 'exhausted']).optional(),
      ok: z.boolean().optional().describe('polyflow: true = outcome "ok", false = outcome "failure"'),
      data: record.optional().describe('data of the completion action, as the order instruction says (the raw tool result may carry more fields)'),
      result: record.optional().describe("polyflow's name for data"),
      note: z.string().optional().describe('one line: what happened'),
      permanent: z.boolean().optional().describe('true when a failure is a result (e.g. a denial), not a fault'),
      attempt: z.number().int().optional(),
    },
    outputSchema: acceptanceShape,
    async handler(a) {
      const runId = runIdOf(a);
      if (a.outcome !== undefined && a.ok !== undefined && a.outcome !== (a.ok ? 'ok' : 'failure'))
        throw new PollyError('bad_input', `outcome ${JSON.stringify(a.outcome)} and ok ${a.ok} disagree: pass one of them.`);
      const outcome = a.outcome ?? (a.ok === undefined ? undefined : a.ok ? 'ok' : 'failure');
      if (outcome === undefined) throw new PollyError('bad_input', 'missing outcome: pass outcome "ok" | "failure" | "exhausted" (or polyflow\'s ok: true | false).');
      if (a.data !== undefined && a.result !== undefined) throw new PollyError('bad_input', "pass the completion data as data or as result (polyflow's name), not both.");
      const current = a.order_id === undefined ? await runtime.state(runId) : null;
      const orderId = a.order_id ?? current?.order?.id;
      if (orderId === undefined) {
        const v = current!;
        return {
          structured: { accepted: false, code: 'not_open', reason: `run ${runId} has no open work order to report.`, run: v.run },
          instruction: `Refused (not_open): run ${runId} has no open work order to report. ${v.instruction}`,
        };
      }
      const r = await runtime.report(runId, orderId, { outcome, data: a.data ?? a.result, note: a.note, permanent: a.permanent, attempt: a.attempt, lease: a.lease_id, session });
      return { structured: { ...r }, instruction: r.accepted ? r.instruction : `Refused (${r.code}): ${r.reason}` };
    },
  });

  const state = defineTool({
    name: 'workflow_state',
    title: 'Show a run',
    description:
      'Show a run: its state, its open work order (if any) and what to do next. Use it to pick up a run after a restart; the open order is the same one as before. ' +
      'The open order is leased to you (lease in the result) unless another session holds it: then order is null and leasedUntil says when it may be offered to you.',
    inputSchema: { ...runArgs },
    outputSchema: { run: anyObject, order: nullableObject, instruction: z.string(), enabled: z.array(anyObject), lease: leaseShape, leasedUntil: z.string().optional() },
    async handler(a) {
      const v = await runtime.state(runIdOf(a), { session });
      return { structured: { ...v }, instruction: v.instruction };
    },
  });

  const signal = defineTool({
    name: 'workflow_signal',
    title: 'Deliver an action to a run',
    description:
      "Deliver an action from outside the work orders (e.g. START with its data when a run waits for it, or CANCEL). An action that does not apply in the run's state is refused with the reason and changes nothing. " +
      'Do not use it to report a work order: use workflow_report.',
    inputSchema: { ...runArgs, action: z.string(), data: record.optional() },
    outputSchema: acceptanceShape,
    async handler(a) {
      const { action, data } = a;
      const r = await runtime.signal(runIdOf(a), action, data ?? {}, { session });
      return { structured: { ...r }, instruction: r.accepted ? r.instruction : `Refused (${r.code}): ${r.reason}` };
    },
  });

  const journal = defineTool({
    name: 'workflow_journal',
    title: "Read a run's journal",
    description: "The run's journal: every step, order, report and reject, in order (seq). Pass after_seq to read only newer lines.",
    inputSchema: { ...runArgs, after_seq: z.number().int().min(0).optional() },
    outputSchema: { entries: z.array(anyObject), instruction: z.string().optional() },
    annotations: { readOnlyHint: true },
    async handler(a) {
      const entries = await runtime.journal(runIdOf(a), a.after_seq ?? 0);
      return { structured: { entries }, instruction: `${entries.length} journal line(s).` };
    },
  });

  return [list, start, report, state, signal, journal] as unknown as PollyToolDefinition[];
}

/**
 * Create the MCP server (not yet connected: call `server.connect(transport)`).
 * @throws Error when two tools share a name.
 */
export function createPollyMcpServer(deps: PollyMcpServerDeps): McpServer {
  const server = new McpServer({ name: deps.name ?? 'polly', version: deps.version ?? '0.1.0' });
  const tools = [...workflowTools(deps.runtime, deps.library, deps.session ?? newSessionId()), ...(deps.extraTools ?? [])];
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) throw new Error(`two MCP tools are named ${tool.name}; rename the extra tool`);
    seen.add(tool.name);
    server.registerTool(
      tool.name,
      // Strict: an argument the schema does not name is refused (the SDK answers isError with the key), as additionalProperties: false says.
      { title: tool.title, description: tool.description, inputSchema: z.object(tool.inputSchema).strict(), outputSchema: tool.outputSchema, annotations: tool.annotations },
      (async (args: Record<string, unknown>) => {
        const r = await tool.handler(args as never);
        const structured = JSON.parse(JSON.stringify(r.structured)) as Record<string, unknown>;
        // Hosts may show the model structuredContent instead of the text (claude 2.1 does): carry the instruction in both.
        if (r.instruction !== undefined && structured.instruction === undefined) structured.instruction = r.instruction;
        const text = `${r.instruction ? `${r.instruction}\n` : ''}${JSON.stringify(structured)}`;
        return { content: [{ type: 'text' as const, text }], structuredContent: structured, ...(r.isError ? { isError: true } : {}) };
      }) as never,
    );
  }
  return server;
}
