/**
 * Model scripts: what the scripted model server answers, as data.
 *
 * A script (YAML) lists sessions. A session is matched against the conversation's system prompt
 * and first user message (Polly's prompts carry a marker `[polly task=<id> role=<purpose>]`).
 * A session has turns: turn i answers the i-th human message of the conversation (the first
 * prompt, then each follow-up such as red-check feedback or review findings). A turn is a list
 * of harness-neutral steps that the server renders, one per model response, as the tool calls of
 * whichever harness is asking (it reads the tool names the CLI declares), and then a final text.
 *
 * Progress is derived from the request itself (how many human messages, how many tool results
 * since the last one), so the server keeps no per-session state and survives restarts.
 *
 * ```yaml
 * sessions:
 *   - name: implement-t1
 *     match: {task: t1, role: implement}     # or contains: ["some text", …]
 *     turns:
 *       - steps:
 *           - read: src/sum.js
 *           - edit: {path: src/sum.js, old: "a - b", new: "a + b"}
 *           - write: {path: NOTES.md, content: "hi\n"}
 *           - run: npm test
 *           - finish: "Fixed sum; tests pass."
 *       - steps:
 *           - finish: "Nothing more to do."
 * ```
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export type Step =
  | { write: { path: string; content: string } }
  | { edit: { path: string; old: string; new: string } }
  | { run: string }
  | { read: string }
  | { finish: string }
  /** Call a tool by its exact name with this input (e.g. an MCP tool such as `mcp__polly__workflow_list`). */
  | { call: { tool: string; input: Record<string, unknown> } };

export interface Turn {
  steps: Step[];
  /** Final text when the turn's steps hold no `finish`. */
  text?: string;
}

export interface SessionMatch {
  /** Matches the token `role=<role>` in the system prompt or first user message. */
  role?: string;
  /** Matches the token `task=<id>`. */
  task?: string;
  /** Every string must occur in the system prompt or first user message. */
  contains?: string[];
}

export interface ScriptSession {
  name: string;
  match: SessionMatch;
  turns: Turn[];
  /**
   * Answer human messages beyond `turns` with the last turn again (e.g. a Brain woken by an
   * unpredictable number of inbox events). Default false: such messages get a "no turn" text.
   */
  repeat_last?: boolean;
  /**
   * Milliseconds to wait before answering each model call of this session (0 to 60,000; default
   * 0). A real model takes seconds a call; a test of what Polly does between two calls (a budget
   * that stops a worker) needs that time, or the scripted worker finishes first.
   */
  latency_ms?: number;
  /**
   * Names of other sessions of the script: this session's answers wait until each of them has
   * sent a model request (at most {@link WAIT_FOR_MAX_MS}; then it is answered all the same). A test
   * of what two workers do at once needs both to have started, however slowly one of them starts.
   */
  wait_for?: string[];
}

/** The longest a session's answer waits for its `wait_for` sessions, in milliseconds. */
export const WAIT_FOR_MAX_MS = 120_000;

export interface ModelScript {
  sessions: ScriptSession[];
}

/** What the server knows about one request's conversation, harness-neutral. */
export interface ConversationView {
  /** The system prompt text (all system blocks joined). */
  system: string;
  /** The text of the first user message. */
  firstUserText: string;
  /** Count of human messages: user messages with text and no tool results. */
  humanTurns: number;
  /** Tool results after the last human message. */
  toolResultsSinceHuman: number;
  /** Text of the most recent tool result, if the last message is one. */
  lastToolResult: { text: string; isError: boolean } | null;
  /** Tool names the client declared in this request. */
  tools: string[];
}

export type Reply = { kind: 'tool'; step: Exclude<Step, { finish: string }>; stepIndex: number } | { kind: 'text'; text: string };

export interface ReplyPlan {
  session: ScriptSession | null;
  turnIndex: number;
  reply: Reply;
}

/**
 * Parse a script from YAML text. Throws an Error naming `source`, the step's place
 * (`sessions[i].turns[j].steps[k]`) and the problem: every step has exactly one known kind with
 * its shape (a `call` without `input` gets `{}`).
 */
export function parseModelScript(text: string, source = '<script>'): ModelScript {
  const doc = parse(text) as unknown;
  if (!doc || typeof doc !== 'object' || !Array.isArray((doc as ModelScript).sessions)) {
    throw new Error(`${source}: a model script needs a top-level "sessions:" list`);
  }
  const sessions = (doc as ModelScript).sessions;
  sessions.forEach((s, i) => {
    if (!s || typeof s !== 'object' || !Array.isArray(s.turns)) throw new Error(`${source}: sessions[${i}] needs "turns:" (a list)`);
    s.name ??= `session-${i}`;
    s.match ??= {};
    if (s.latency_ms !== undefined && !(typeof s.latency_ms === 'number' && Number.isFinite(s.latency_ms) && s.latency_ms >= 0 && s.latency_ms <= 60_000)) {
      throw new Error(`${source}: sessions[${i}].latency_ms must be a number of milliseconds from 0 to 60000; got ${JSON.stringify(s.latency_ms)}`);
    }
    if (s.wait_for !== undefined) {
      const names = sessions.map((x, n) => x?.name ?? `session-${n}`);
      const bad = Array.isArray(s.wait_for) ? s.wait_for.find((w) => typeof w !== 'string' || w === s.name || !names.includes(w)) : s.wait_for;
      if (!Array.isArray(s.wait_for) || bad !== undefined) {
        throw new Error(
          `${source}: sessions[${i}].wait_for must list the names of other sessions of this script (${names.filter((n) => n !== s.name).join(', ') || 'none'}); got ${JSON.stringify(bad)}`,
        );
      }
    }
    s.turns.forEach((t, j) => {
      if (!t || !Array.isArray(t.steps)) throw new Error(`${source}: sessions[${i}].turns[${j}] needs "steps:" (a list)`);
      for (const [k, step] of t.steps.entries()) checkStep(step, `${source}: sessions[${i}].turns[${j}].steps[${k}]`);
    });
  });
  return { sessions };
}

const STEP_SHAPES: Record<string, string> = {
  write: '{path, content}',
  edit: '{path, old, new}',
  run: 'a command string',
  read: 'a path string',
  finish: 'the report text',
  call: '{tool, input}',
};

function checkStep(step: unknown, where: string): void {
  const keys = step && typeof step === 'object' ? Object.keys(step) : [];
  const kind = keys[0];
  if (keys.length !== 1 || kind === undefined || !(kind in STEP_SHAPES)) {
    throw new Error(`${where}: a step has exactly one of ${Object.keys(STEP_SHAPES).join(', ')}; got ${JSON.stringify(step)}`);
  }
  const v = (step as Record<string, unknown>)[kind];
  const isStr = (x: unknown): boolean => typeof x === 'string';
  const o = (v ?? {}) as Record<string, unknown>;
  const ok =
    kind === 'write'
      ? isStr(o.path) && isStr(o.content)
      : kind === 'edit'
        ? isStr(o.path) && isStr(o.old) && isStr(o.new)
        : kind === 'call'
          ? isStr(o.tool) && (o.input === undefined || (typeof o.input === 'object' && o.input !== null))
          : isStr(v);
  if (!ok) throw new Error(`${where}: "${kind}" needs ${STEP_SHAPES[kind]}; got ${JSON.stringify(v)}`);
  if (kind === 'call') o.input ??= {};
}

/** Read and parse a script file. */
export function loadModelScript(path: string): ModelScript {
  return parseModelScript(readFileSync(path, 'utf8'), path);
}

function hasToken(haystack: string, key: string, value: string): boolean {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w-])${key}=${escaped}(?![\\w-])`).test(haystack);
}

/** The first session whose match holds for this conversation, or null. */
export function matchSession(script: ModelScript, view: Pick<ConversationView, 'system' | 'firstUserText'>): ScriptSession | null {
  const haystack = `${view.system}\n${view.firstUserText}`;
  for (const s of script.sessions) {
    const m = s.match;
    if (m.role !== undefined && !hasToken(haystack, 'role', m.role)) continue;
    if (m.task !== undefined && !hasToken(haystack, 'task', m.task)) continue;
    if (m.contains && !m.contains.every((c) => haystack.includes(c))) continue;
    return s;
  }
  return null;
}

export interface PlanOptions {
  /**
   * A harness's view of a turn's steps, e.g. Claude Code needs a `read` before an `edit`. Must be
   * deterministic: progress is counted in tool results against the expanded list.
   */
  expandSteps?: (steps: Step[]) => Step[];
}

/** Polly's prompt marker `[polly task=<id> role=<purpose>]` (brain/task-tools/dispatch.ts `promptMarker`). */
const POLLY_MARKER = /\[polly task=([^\s\]]+) role=([^\s\]]+)\]/;

/**
 * The final text for a Polly conversation no session matches: it says so, names the conversation's
 * task and role and what each session matches, so the worker's report (and the task's reason, "the
 * worker made no change") shows a script that did not match rather than an agent that did nothing.
 */
export function unmatchedText(script: ModelScript, task: string, role: string): string {
  const sessions = script.sessions.map((s) => `${s.name} ${JSON.stringify(s.match)}`).join('; ');
  return `(scripted model: no session of the script matches this conversation, [polly task=${task} role=${role}]; the script's sessions match: ${sessions}. Add a session with match: {task: ${task}, role: ${role}}, or fix a session's match.)`;
}

/**
 * Decide the next reply for a conversation: the next step of the current turn as a tool call, or
 * the turn's final text once its steps are done. An unmatched conversation of a Polly worker
 * (its prompt marker) gets {@link unmatchedText}; other unmatched ones (title generation, …) a
 * short neutral text.
 */
export function planReply(script: ModelScript, view: ConversationView, options: PlanOptions = {}): ReplyPlan {
  const session = matchSession(script, view);
  const turnIndex = Math.max(0, view.humanTurns - 1);
  if (!session) {
    const marker = POLLY_MARKER.exec(`${view.system}\n${view.firstUserText}`);
    return { session: null, turnIndex, reply: { kind: 'text', text: marker ? unmatchedText(script, marker[1]!, marker[2]!) : 'OK.' } };
  }
  const turn = session.turns[turnIndex] ?? (session.repeat_last ? session.turns[session.turns.length - 1] : undefined);
  if (!turn) {
    return { session, turnIndex, reply: { kind: 'text', text: `(scripted session "${session.name}" has no turn ${turnIndex + 1}; stopping)` } };
  }
  let index = 0;
  for (const step of options.expandSteps ? options.expandSteps(turn.steps) : turn.steps) {
    if ('finish' in step) return { session, turnIndex, reply: { kind: 'text', text: step.finish } };
    if (index === view.toolResultsSinceHuman) return { session, turnIndex, reply: { kind: 'tool', step, stepIndex: index } };
    index += 1;
  }
  return { session, turnIndex, reply: { kind: 'text', text: turn.text ?? 'Done.' } };
}
