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
 * that does not apply — are ordinary results with an instruction; faults (an unknown run id,
 * a broken registry) come back as `isError: true`; an unknown tool is JSON-RPC error -32602, and so
 * are bad arguments under protocol versions before 2025-11-25 (see {@link createPollyMcpServer}).
 * Every tool declares all four behaviour hints ({@link ToolHints}).
 *
 * Every tool's arguments are a strict object (`additionalProperties: false` in the listed schema,
 * and enforced: an unknown argument is an argument error naming it). Each server is one MCP
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
import { isPollyError, PollyError } from '../core/errors.js';
import { CallToolRequestSchema, ErrorCode, LATEST_PROTOCOL_VERSION, McpError, SUPPORTED_PROTOCOL_VERSIONS, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
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
  /** All four behaviour hints, always declared: the specification's defaults assume the worst (see {@link ToolHints}). */
  annotations: ToolHints;
  handler(args: z.objectOutputType<S, ZodTypeAny>): Promise<PollyToolResult>;
}

/**
 * The four behaviour hints of MCP's `ToolAnnotations` (modelcontextprotocol.io/specification/2025-06-18/schema#toolannotations),
 * every one declared because an absent hint means the worst (readOnly false, destructive true,
 * idempotent false, openWorld true):
 * - `readOnlyHint`: the tool changes nothing (no run, lease, cursor or journal line);
 * - `destructiveHint`: it may end or undo something for good (only additive updates when false);
 * - `idempotentHint`: a second call with the same arguments has no further effect;
 * - `openWorldHint`: it reaches beyond Polly's own store (a worker that uses the network).
 */
export type ToolHints = Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'>>;

/** Hints of a tool that only reads the store. */
export const READ_ONLY: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

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
 * An error in a tool's arguments that its schema cannot express (two aliases that disagree, one
 * of two optional fields missing): `bad_input` with `details.argument`, answered like a schema
 * failure (see {@link createPollyMcpServer}).
 */
function argumentError(argument: string, message: string): PollyError {
  return new PollyError('bad_input', message, { details: { argument } });
}

/**
 * The run id from `run_id` or its polyflow alias `instance` (one of them; both only when equal).
 * @throws PollyError `bad_input` (an argument error) naming both when they differ, or saying what
 *         to pass when neither is given.
 */
function runIdOf(a: { run_id?: string; instance?: string }): string {
  if (a.run_id !== undefined && a.instance !== undefined && a.run_id !== a.instance)
    throw argumentError(
      'run_id',
      `pass the run as run_id or as instance (polyflow's name), not both with different values (run_id ${JSON.stringify(a.run_id)}, instance ${JSON.stringify(a.instance)}).`,
    );
  const id = a.run_id ?? a.instance;
  if (id === undefined) throw argumentError('run_id', 'missing run_id (or its polyflow alias instance): pass the run id workflow_start returned.');
  return id;
}

const runArgs = {
  run_id: z.string().optional().describe('the run id workflow_start returned'),
  instance: z.string().optional().describe("polyflow's name for run_id"),
};
// Factories, not shared instances: the SDK's JSON Schema rendering turns a zod instance used twice into a `$ref`, which some hosts do not resolve.
const leaseShape = () => z.object({ id: z.string(), order: z.string(), expiresAt: z.string() }).nullable().optional();

const anyObject = () => z.object({}).passthrough();
const nullableObject = () => anyObject().nullable();
/** The answer of a call that may be refused (workflow_report, workflow_signal): accepted or a code and reason. */
const acceptanceShape = {
  accepted: z.boolean(),
  run: anyObject(),
  order: nullableObject().optional(),
  instruction: z.string().optional(),
  code: z.string().optional(),
  reason: z.string().optional(),
  lease: leaseShape(),
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
    outputSchema: { workflows: z.array(anyObject()), agentArea: z.string(), instanceArea: z.string(), instruction: z.string().optional() },
    annotations: READ_ONLY,
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
    inputSchema: { workflow: z.string().describe('workflow name from workflow_list'), input: anyObject().default({}).describe("the workflow's input fields (see workflow_list)") },
    // Creates a run (and leases its order) once; the same input attaches to that run: nothing further happens.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    outputSchema: {
      status: z.enum(['started', 'attached', 'finished', 'refused']),
      run: nullableObject(),
      order: nullableObject(),
      instruction: z.string(),
      code: z.string().optional(),
      reasons: z.array(z.string()).optional(),
      lease: leaseShape(),
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
      data: anyObject().optional().describe('data of the completion action, as the order instruction says (the raw tool result may carry more fields)'),
      result: anyObject().optional().describe("polyflow's name for data"),
      note: z.string().optional().describe('one line: what happened'),
      permanent: z.boolean().optional().describe('true when a failure is a result (e.g. a denial), not a fault'),
      attempt: z.number().int().optional(),
    },
    outputSchema: acceptanceShape,
    // Moves the run along a checked transition; its history stays in the journal. Not idempotent:
    // without order_id a second identical call reports the order the first one opened.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler(a) {
      const runId = runIdOf(a);
      if (a.outcome !== undefined && a.ok !== undefined && a.outcome !== (a.ok ? 'ok' : 'failure'))
        throw argumentError('outcome', `outcome ${JSON.stringify(a.outcome)} and ok ${a.ok} disagree: pass one of them.`);
      const outcome = a.outcome ?? (a.ok === undefined ? undefined : a.ok ? 'ok' : 'failure');
      if (outcome === undefined) throw argumentError('outcome', 'missing outcome: pass outcome "ok" | "failure" | "exhausted" (or polyflow\'s ok: true | false).');
      if (a.data !== undefined && a.result !== undefined) throw argumentError('data', "pass the completion data as data or as result (polyflow's name), not both.");
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
    outputSchema: { run: anyObject(), order: nullableObject(), instruction: z.string(), enabled: z.array(anyObject()), lease: leaseShape(), leasedUntil: z.string().optional() },
    // Not read-only: it leases the open order to this session (a run.claimed journal line); asking again renews the same lease.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
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
    inputSchema: { ...runArgs, action: z.string(), data: anyObject().optional() },
    outputSchema: acceptanceShape,
    // An out-of-band action may end a run that had not finished (CANCEL), and one that applies again moves it again.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
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
    outputSchema: { entries: z.array(anyObject()), instruction: z.string().optional() },
    annotations: READ_ONLY,
    async handler(a) {
      const entries = await runtime.journal(runIdOf(a), a.after_seq ?? 0);
      return { structured: { entries }, instruction: `${entries.length} journal line(s).` };
    },
  });

  return [list, start, report, state, signal, journal] as unknown as PollyToolDefinition[];
}

/**
 * The first protocol version (modelcontextprotocol.io/specification/2025-11-25, SEP-1303) whose
 * tools page makes arguments that fail a tool's input schema a tool execution error (`isError`)
 * instead of a protocol error; 2025-06-18 and earlier list "invalid arguments" among the protocol errors.
 */
export const ARGUMENT_ERRORS_AS_RESULTS_SINCE = '2025-11-25';

/** The JSON-RPC error for arguments that fail a tool's schema under protocol versions before 2025-11-25: -32602 naming the tool and the problem. */
function invalidArguments(tool: string, problem: string): McpError {
  return new McpError(ErrorCode.InvalidParams, `Invalid arguments for tool ${tool}: ${problem}`);
}

/** A zod error as one line per issue: `message at a.b` (the SDK's own wording). */
function zodProblem(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.message} at ${i.path.join('.')}` : i.message)).join('; ');
}

/**
 * Create the MCP server (not yet connected: call `server.connect(transport)`).
 *
 * `tools/call` is answered here rather than by the SDK's McpServer (1.32 turns every failure,
 * an unknown tool included, into an `isError` result), as the MCP specification's tools page says:
 * - an unknown tool name: JSON-RPC error -32602 (Invalid params), naming the tools there are;
 * - arguments that fail the tool's input schema, or an argument error its handler finds (two
 *   aliases that disagree): -32602 when the session negotiated a protocol version before
 *   {@link ARGUMENT_ERRORS_AS_RESULTS_SINCE}, else an `isError` result the model can correct
 *   from (SEP-1303). The negotiated version is read from the initialize request, by the SDK's rule;
 * - a fault (an unknown run id, a broken store): an `isError` result with the message;
 * - structured content that fails the tool's own output schema (a server bug): -32603;
 * - a domain refusal (a refused workflow, a stale or duplicate report): an ordinary result.
 * Requests that are not valid `tools/call` requests at all are answered by the stdio transport.
 * @throws Error when two tools share a name.
 */
export function createPollyMcpServer(deps: PollyMcpServerDeps): McpServer {
  const server = new McpServer({ name: deps.name ?? 'polly', version: deps.version ?? '0.1.0' });
  const tools = [...workflowTools(deps.runtime, deps.library, deps.session ?? newSessionId()), ...(deps.extraTools ?? [])];
  const byName = new Map<string, { tool: PollyToolDefinition; input: z.ZodTypeAny; output: z.ZodTypeAny | null }>();
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`two MCP tools are named ${tool.name}; rename the extra tool`);
    // Strict: an argument the schema does not name is refused, as additionalProperties: false in the listed schema says.
    const input = z.object(tool.inputSchema).strict();
    byName.set(tool.name, { tool, input, output: tool.outputSchema ? z.object(tool.outputSchema) : null });
    // Registered for tools/list (the SDK renders the JSON Schemas); tools/call is answered below.
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: input, outputSchema: tool.outputSchema, annotations: tool.annotations },
      (() => {
        throw new Error('tools/call is answered by createPollyMcpServer');
      }) as never,
    );
  }

  // The version this session negotiated, by the SDK's own rule (the client's if supported, else the latest), read off the initialize request as it arrives.
  let protocolVersion = LATEST_PROTOCOL_VERSION;
  const connect = server.connect.bind(server);
  server.connect = async (transport) => {
    await connect(transport);
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const m = message as { method?: unknown; params?: { protocolVersion?: unknown } };
      if (m.method === 'initialize') {
        const asked = m.params?.protocolVersion;
        protocolVersion = typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
      }
      deliver?.(message, extra);
    };
  };

  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const name = request.params.name;
    const entry = byName.get(name);
    if (!entry)
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown tool: ${JSON.stringify(name)}. This server's tools are ${[...byName.keys()].join(', ')}; tools/list gives their schemas.`,
      );
    const argumentsAreProtocolErrors = protocolVersion < ARGUMENT_ERRORS_AS_RESULTS_SINCE;
    const toolError = (text: string) => ({ content: [{ type: 'text' as const, text }], isError: true });
    const parsed = entry.input.safeParse(request.params.arguments ?? {});
    if (!parsed.success) {
      const problem = zodProblem(parsed.error);
      if (argumentsAreProtocolErrors) throw invalidArguments(name, problem);
      return toolError(`Input validation error: Invalid arguments for tool ${name}: ${problem}`);
    }
    let r: PollyToolResult;
    try {
      r = await entry.tool.handler(parsed.data as never);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (isPollyError(error, 'bad_input') && error.details?.argument !== undefined) {
        if (argumentsAreProtocolErrors) throw invalidArguments(name, message);
        return toolError(`Invalid arguments for tool ${name}: ${message}`);
      }
      return toolError(message);
    }
    const structured = JSON.parse(JSON.stringify(r.structured)) as Record<string, unknown>;
    // Hosts may show the model structuredContent instead of the text (claude 2.1 does): carry the instruction in both.
    if (r.instruction !== undefined && structured.instruction === undefined) structured.instruction = r.instruction;
    if (entry.output && !r.isError) {
      const checked = entry.output.safeParse(structured);
      if (!checked.success)
        throw new McpError(
          ErrorCode.InternalError,
          `Polly's ${name} returned a result its own output schema does not allow (${zodProblem(checked.error)}); please report this as a bug.`,
        );
    }
    const text = `${r.instruction ? `${r.instruction}\n` : ''}${JSON.stringify(structured)}`;
    return { content: [{ type: 'text' as const, text }], structuredContent: structured, ...(r.isError ? { isError: true } : {}) };
  });
  return server;
}
