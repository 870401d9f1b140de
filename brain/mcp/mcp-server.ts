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
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
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
}

const record = z.record(z.unknown());
const anyObject = z.object({}).passthrough();
const nullableObject = anyObject.nullable();

/** The seed's startup lines, one per workflow: `[polly] admitted: NAME — …` or `[polly] REFUSED: NAME` + `[polly]   invariant`. */
export function admissionLines(library: WorkflowLibrary): string[] {
  const out: string[] = [];
  for (const e of library.entries()) {
    out.push(`[polly] ${e.line}`);
    if (!e.admitted) for (const r of e.reasons) out.push(`[polly]   ${r.split('\n')[0]}`);
  }
  return out;
}

/** The six workflow tools over `runtime` and `library`. */
export function workflowTools(runtime: Runtime, library: WorkflowLibrary): PollyToolDefinition[] {
  const list = defineTool({
    name: 'workflow_list',
    title: 'List workflows',
    description:
      'List the workflows you can run here. Each admitted workflow was model-checked: it comes with the guarantees it was admitted under, ' +
      'the tools its work orders will ask you to run, and its key template (the run identity, derived from the input). Refused workflows are listed with the violated invariants and cannot be started. ' +
      'Next: pick the admitted workflow that covers the user\'s task and call workflow_start with its input.',
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
      return { structured: { workflows, agentArea: runtime.agentArea, instanceArea: runtime.instanceArea }, instruction: `Admitted: ${admitted.join(', ') || 'none'}. Start one with workflow_start {workflow, input}.` };
    },
  });

  const start = defineTool({
    name: 'workflow_start',
    title: 'Start or attach to a workflow run',
    description:
      'Start a run of an admitted workflow, or attach to the run already in progress for the same input: the run key is derived from the input by the workflow\'s key template, never chosen by you, so calling this again is safe. ' +
      'It returns the one open work order: run that tool yourself, under your own permissions, then call workflow_report. ' +
      'A refused workflow cannot be started (the result says why); invalid input is refused with what to pass; a finished run says so — do not start another.',
    inputSchema: { workflow: z.string().describe('workflow name from workflow_list'), input: record.default({}).describe('the workflow\'s input fields (see workflow_list)') },
    outputSchema: { status: z.enum(['started', 'attached', 'finished', 'refused']), run: nullableObject, order: nullableObject, instruction: z.string(), code: z.string().optional(), reasons: z.array(z.string()).optional() },
    async handler({ workflow, input }) {
      const r = await runtime.start(workflow, input);
      return { structured: { ...r }, instruction: r.instruction };
    },
  });

  const report = defineTool({
    name: 'workflow_report',
    title: 'Report a work order',
    description:
      'Report the outcome of the open work order, exactly once: outcome "ok" with the data the order asked for; "failure" with permanent: true when the failure is a result (a human denied, a refusal) — the workflow takes its failure branch; ' +
      '"failure" without permanent for a transient fault (it is re-offered while attempts remain). The result holds the next work order (run it, then report it) or says the run finished. ' +
      'A duplicate or stale report is refused and changes nothing.',
    inputSchema: {
      run_id: z.string(),
      order_id: z.string(),
      outcome: z.enum(['ok', 'failure', 'exhausted']),
      data: record.optional().describe('data of the completion action, as the order instruction says'),
      note: z.string().optional().describe('one line: what happened'),
      permanent: z.boolean().optional().describe('true when a failure is a result (e.g. a denial), not a fault'),
      attempt: z.number().int().optional(),
    },
    outputSchema: { accepted: z.boolean(), run: anyObject, order: nullableObject.optional(), instruction: z.string().optional(), code: z.string().optional(), reason: z.string().optional() },
    async handler(a) {
      const r = await runtime.report(a.run_id, a.order_id, { outcome: a.outcome, data: a.data, note: a.note, permanent: a.permanent, attempt: a.attempt });
      return { structured: { ...r }, instruction: r.accepted ? r.instruction : `Refused (${r.code}): ${r.reason}` };
    },
  });

  const state = defineTool({
    name: 'workflow_state',
    title: 'Show a run',
    description: 'Show a run: its state, its open work order (if any) and what to do next. Use it to pick up a run after a restart; the open order is the same one as before.',
    inputSchema: { run_id: z.string() },
    outputSchema: { run: anyObject, order: nullableObject, instruction: z.string(), enabled: z.array(anyObject) },
    annotations: { readOnlyHint: true },
    async handler({ run_id }) {
      const v = await runtime.state(run_id);
      return { structured: { ...v }, instruction: v.instruction };
    },
  });

  const signal = defineTool({
    name: 'workflow_signal',
    title: 'Deliver an action to a run',
    description:
      'Deliver an action from outside the work orders (e.g. START with its data when a run waits for it, or CANCEL). An action that does not apply in the run\'s state is refused with the reason and changes nothing. ' +
      'Do not use it to report a work order: use workflow_report.',
    inputSchema: { run_id: z.string(), action: z.string(), data: record.optional() },
    outputSchema: { accepted: z.boolean(), run: anyObject, order: nullableObject.optional(), instruction: z.string().optional(), code: z.string().optional(), reason: z.string().optional() },
    async handler({ run_id, action, data }) {
      const r = await runtime.signal(run_id, action, data ?? {});
      return { structured: { ...r }, instruction: r.accepted ? r.instruction : `Refused (${r.code}): ${r.reason}` };
    },
  });

  const journal = defineTool({
    name: 'workflow_journal',
    title: 'Read a run\'s journal',
    description: 'The run\'s journal: every step, order, report and reject, in order (seq). Pass after_seq to read only newer lines.',
    inputSchema: { run_id: z.string(), after_seq: z.number().int().min(0).optional() },
    outputSchema: { entries: z.array(anyObject), instruction: z.string().optional() },
    annotations: { readOnlyHint: true },
    async handler({ run_id, after_seq }) {
      const entries = await runtime.journal(run_id, after_seq ?? 0);
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
  const tools = [...workflowTools(deps.runtime, deps.library), ...(deps.extraTools ?? [])];
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) throw new Error(`two MCP tools are named ${tool.name}; rename the extra tool`);
    seen.add(tool.name);
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.inputSchema, outputSchema: tool.outputSchema, annotations: tool.annotations },
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
