/**
 * The admission checker: an exhaustive breadth-first search over the product of a workflow and
 * one monitor automaton per invariant (see `monitors.ts`), within the declared finite domains.
 *
 * Semantics (what "admitted" means):
 * - The environment may deliver any declared action with any value of its data domain at any
 *   time; a delivery that enables no transition is rejected by the runtime and changes nothing,
 *   so it is not a step. Every enabled (action, data) pair of every reachable state is explored.
 * - Safety invariants (`never`, `requires_before`, `at_most`) are checked on every step.
 * - `eventually_after` is checked on finite runs: every run that reaches a terminal state (or
 *   closes the invariant's window) with an obligation still open is a violation. Infinite runs
 *   are handled separately: every workflow must keep a terminal state reachable from every
 *   reachable state (`terminal-always-reachable`, i.e. AG EF terminal), and a `terminates`
 *   invariant (Polly's "every path terminates") refuses any cycle at all in the reachable graph.
 * - Built-in refusals: a reachable non-terminal state with no enabled action (`deadlock-free`);
 *   a reachable state from which no terminal state is reachable (`terminal-always-reachable`);
 *   a step that emits effects but changes neither the control state nor a variable
 *   (`no-emission-on-identity-transition`); an emitted effect kind that is not declared
 *   (`effects-declared`); an effect kind without both `on_ok` and `on_failure`
 *   (`effects-have-completions`); an assignment outside a variable's domain
 *   (`within-declared-domains`); reaching the state cap (`state-cap`: "not exhaustive").
 *
 * Counting: "states seen" = distinct product states (workflow state × monitor states) reached;
 * "paths explored" = transitions fired, i.e. edges of the reachable product graph (each
 * enabled (state, action, data) triple once), including edges into already-seen states.
 *
 * Because the search is breadth-first and each violation is recorded at the first edge (or
 * state) that shows it, every safety trace is a shortest one. The checker is a pure function.
 */
import { NOT_ENABLED, compileModel, decodeValue, fire, type Model } from './model.js';
import { VIOLATION, monitorStep, obligationOpen } from './monitors.js';
import { createStateSpace, type StateSpace } from './state-space.js';
import type { TraceStep, Value, Workflow } from '../workflow-schema.js';

/** One violated invariant (or built-in rule) with its shortest counterexample. */
export interface Violation {
  /** The invariant's name, or the built-in rule's name (e.g. `deadlock-free`). */
  invariant: string;
  /** `never` | `requires_before` | `at_most` | `eventually_after` | `terminates` | `deadlock` | `no-terminal-reachable` | `emission-on-identity` | `undeclared-effect` | `effect-without-completion` | `out-of-domain` | `state-cap`. */
  kind: string;
  trace: TraceStep[];
  /** For cycles: the index in `trace` where the repeated part starts. */
  cycleStart?: number;
  /** Extra explanation (e.g. which effect kind), when useful. */
  detail?: string;
}

/** The outcome of {@link checkWorkflow}. */
export interface CheckResult {
  admitted: boolean;
  name: string;
  /** The verdict's first line: `admitted: NAME — …` or `REFUSED: NAME`. */
  line: string;
  pathsExplored: number;
  statesSeen: number;
  /** How many of the states seen are terminal. */
  terminalStates: number;
  violations: Violation[];
  /** False when the state cap stopped the search (then `admitted` is false). */
  exhaustive: boolean;
  /** Wall time of the search in milliseconds (informational). */
  elapsedMs: number;
}

export interface CheckOptions {
  /** Stop (and refuse: "not exhaustive") after this many product states. Default 5,000,000. */
  stateCap?: number;
}

export const DEFAULT_STATE_CAP = 5_000_000;

const BUILTIN_KIND: Record<string, string> = {
  'deadlock-free': 'deadlock',
  'terminal-always-reachable': 'no-terminal-reachable',
  'no-emission-on-identity-transition': 'emission-on-identity',
  'effects-declared': 'undeclared-effect',
  'effects-have-completions': 'effect-without-completion',
  'within-declared-domains': 'out-of-domain',
};

/** A violation as the search records it: the first edge or state that shows it (its trace is rebuilt by the verdict). */
interface Found {
  invariant: string;
  kind: string;
  /** State index the trace leads to; with `move` >= 0, the trace continues with that move. */
  state: number;
  move: number;
  detail?: string;
  cycle?: number[];
}

/**
 * Model-check `wf` exhaustively within its declared domains.
 * @returns the verdict, counts and, per violated invariant, its shortest trace.
 */
export function checkWorkflow(wf: Workflow, options: CheckOptions = {}): CheckResult {
  const started = performance.now();
  const stateCap = options.stateCap ?? DEFAULT_STATE_CAP;
  const model = compileModel(wf);
  const space = createStateSpace(model);
  const found = new Map<string, Found>();
  const record = (f: Found): void => {
    if (!found.has(f.invariant)) found.set(f.invariant, f);
  };
  const moves = buildMoves(model);
  const search = explore(model, space, moves, stateCap, record);
  if (!search.capped) checkReachability(model, space, record);
  checkStaticRules(model, record);
  return verdict(model, space, moves, search, stateCap, found, started);
}

/** Every (action, valuation) pair, numbered, and per state-slot value the moves worth trying. */
interface Moves {
  moveAction: number[];
  moveData: Int32Array[];
  /** Moves whose action has no selector: tried in every state. */
  always: Int32Array;
  /** Per selector slot: the slot, its minimum, and the moves per slot value (offset by the minimum). */
  selSlots: number[];
  selMin: number[];
  buckets: Int32Array[][];
}

/** Number the moves and bucket them by their action's selector (see Model.selectors). */
function buildMoves(model: Model): Moves {
  const moveAction: number[] = [];
  const moveData: Int32Array[] = [];
  for (const a of model.actions) {
    for (const d of a.valuations) {
      moveAction.push(a.index);
      moveData.push(d);
    }
  }
  // Per state only the moves whose action's selector admits the state are tried (see Model.selectors).
  const always: number[] = [];
  const selSlots: number[] = [];
  const selMin: number[] = [];
  const buckets: number[][][] = [];
  moveAction.forEach((a, mv) => {
    const sel = model.selectors[a];
    if (!sel) {
      always.push(mv);
      return;
    }
    let k = selSlots.indexOf(sel.slot);
    if (k < 0) {
      k = selSlots.length;
      selSlots.push(sel.slot);
      selMin.push(model.slots[sel.slot]!.min);
      buckets.push(Array.from({ length: sel.allowed.length }, () => []));
    }
    sel.allowed.forEach((ok, v) => {
      if (ok) buckets[k]![v]!.push(mv);
    });
  });
  return { moveAction, moveData, always: Int32Array.from(always), selSlots, selMin, buckets: buckets.map((b) => b.map((list) => Int32Array.from(list))) };
}

/** What the breadth-first search found besides violations. */
interface SearchCounts {
  paths: number;
  terminals: number;
  /** The state cap stopped the search. */
  capped: boolean;
}

/**
 * Breadth-first search of the product graph from the initial state: fires every enabled move of
 * every non-terminal state, steps the monitors, records per-step violations through `record` and
 * stores states and edges in `space`. Stops after the state that crosses `stateCap`.
 */
function explore(model: Model, space: StateSpace, moves: Moves, stateCap: number, record: (f: Found) => void): SearchCounts {
  const { nslots, width } = space;
  const monitors = model.monitors;
  const { moveAction, moveData, selSlots, selMin } = moves;
  const bucketArrays = moves.buckets;
  const alwaysArr = moves.always;
  const todo = new Int32Array(moveAction.length);
  const incomplete = new Set(model.incompleteEffects);
  const incompleteIdx = new Set(model.wf.effects.map((e, i) => (incomplete.has(e.kind) ? i : -1)).filter((i) => i >= 0));
  const eventuallyMonitors = monitors.filter((m) => m.invariant.pattern === 'eventually_after');

  const cur = new Int32Array(width);
  const next = new Int32Array(width);
  const init = new Int32Array(width);
  init.set(model.initial);
  monitors.forEach((m, i) => {
    init[nslots + i] = m.initial;
  });
  space.insert(init);

  let paths = 0;
  let capped = false;
  let expanded = 0;
  let terminals = 0;
  const terminalMask = model.terminalMask;
  for (let i = 0; i < space.count; i++) {
    expanded = i + 1;
    space.decode(i, cur);
    space.beginEdges(i);
    if (terminalMask[cur[0]!] === 1) {
      terminals++;
      continue;
    }
    let enabled = 0;
    let ntodo = 0;
    for (let k = 0; k < alwaysArr.length; k++) todo[ntodo++] = alwaysArr[k]!;
    for (let k = 0; k < selSlots.length; k++) {
      const list = bucketArrays[k]![cur[selSlots[k]!]! - selMin[k]!]!;
      for (let q = 0; q < list.length; q++) todo[ntodo++] = list[q]!;
    }
    for (let q = 0; q < ntodo; q++) {
      const mv = todo[q]!;
      const d = moveData[mv]!;
      const t = fire(model, cur, moveAction[mv]!, d, next);
      if (t === NOT_ENABLED) continue;
      enabled++;
      paths++;
      if (t < NOT_ENABLED) {
        record({
          invariant: 'within-declared-domains',
          kind: 'out-of-domain',
          state: i,
          move: mv,
          detail: `transitions[${-t - 2}] assigns a value outside a variable's declared domain`,
        });
        continue;
      }
      for (let k = nslots; k < width; k++) next[k] = cur[k]!;
      const tr = model.transitions[t]!;
      if (tr.emits.length > 0) {
        let same = true;
        for (let k = 0; k < nslots; k++) {
          if (next[k] !== cur[k]) {
            same = false;
            break;
          }
        }
        if (same)
          record({
            invariant: 'no-emission-on-identity-transition',
            kind: 'emission-on-identity',
            state: i,
            move: mv,
            detail: `transitions[${t}] emits ${tr.emitNames.join(', ')} without changing the state`,
          });
        for (let k = 0; k < tr.emits.length; k++) {
          const e = tr.emits[k]!;
          if (e < 0)
            record({
              invariant: 'effects-declared',
              kind: 'undeclared-effect',
              state: i,
              move: mv,
              detail: `transitions[${t}] emits "${tr.emitNames[k]}", which is not declared under effects`,
            });
          else if (incompleteIdx.has(e))
            record({
              invariant: 'effects-have-completions',
              kind: 'effect-without-completion',
              state: i,
              move: mv,
              detail: `effect kind "${tr.emitNames[k]}" declares no on_ok/on_failure completion: the run would wait forever`,
            });
        }
      }
      const ops = tr.monitorOps;
      for (let k = 0; k < ops.length; k++) {
        const op = ops[k]!;
        if (op.cond !== null && op.cond(next, d) === 0) continue;
        const slot = nslots + op.monitor;
        const m = monitors[op.monitor]!;
        const y = monitorStep(m, next[slot]!, op.role, op.bit);
        if (y === VIOLATION) record({ invariant: m.name, kind: m.invariant.pattern, state: i, move: mv });
        else next[slot] = y;
      }
      if (terminalMask[next[0]!] === 1) {
        for (const m of eventuallyMonitors) {
          if (obligationOpen(m, next[nslots + m.index]!))
            record({ invariant: m.name, kind: 'eventually_after', state: i, move: mv, detail: 'the run terminates with the obligation still open' });
        }
      }
      const j = space.insert(next);
      space.addEdge(j, i, mv);
    }
    if (enabled === 0)
      record({ invariant: 'deadlock-free', kind: 'deadlock', state: i, move: -1, detail: `no action is enabled in non-terminal state "${model.wf.states[cur[0]!]}"` });
    if (space.count > stateCap) {
      capped = true;
      break;
    }
  }
  space.endEdges(expanded);
  return { paths, terminals, capped };
}

/**
 * `terminal-always-reachable` (AG EF terminal) and `terminates` (no cycle) over the complete
 * reachable graph: a terminal state must be reachable from every state; with a `terminates`
 * invariant, a cycle is recorded with its states.
 */
function checkReachability(model: Model, space: StateSpace, record: (f: Found) => void): void {
  const terminalMask = model.terminalMask;
  // Topological order (Kahn). When the reachable graph is acyclic (every Polly workflow must
  // be), "a terminal state is reachable" is computed backwards along that order with the
  // forward edges; otherwise by breadth-first search over the reversed edges.
  const topo = space.topologicalOrder();
  const reach = new Uint8Array(space.count);
  for (let i = 0; i < space.count; i++) if (terminalMask[space.control(i)] === 1) reach[i] = 1;
  let back: { start: Int32Array; to: Int32Array } | null = null;
  if (topo.complete) {
    for (let k = space.count - 1; k >= 0; k--) {
      const st = topo.order[k]!;
      if (reach[st] === 0 && space.anySuccessor(st, reach)) reach[st] = 1;
    }
  } else {
    back = space.reverse();
    const queue = new Int32Array(space.count);
    let qh = 0;
    let qt = 0;
    for (let i = 0; i < space.count; i++) if (reach[i] === 1) queue[qt++] = i;
    while (qh < qt) {
      const st = queue[qh++]!;
      for (let e = back.start[st]!; e < back.start[st + 1]!; e++) {
        const p = back.to[e]!;
        if (reach[p] === 0) {
          reach[p] = 1;
          queue[qt++] = p;
        }
      }
    }
  }
  for (let i = 0; i < space.count; i++) {
    if (reach[i] === 0) {
      record({
        invariant: 'terminal-always-reachable',
        kind: 'no-terminal-reachable',
        state: i,
        move: -1,
        detail: 'from this state no terminal state can be reached (a loop or trap with no exit)',
      });
      break;
    }
  }
  const term = model.wf.invariants.find((x) => x.pattern === 'terminates');
  if (term && !topo.complete) {
    const cycle = space.findCycle(back!, topo.indeg);
    record({ invariant: term.name, kind: 'terminates', state: cycle[0]!, move: -1, cycle, detail: 'a cycle: this run can go on forever' });
  }
}

/** Static rules: refuse what no reachable step showed (effects without completions, undeclared effects). */
function checkStaticRules(model: Model, record: (f: Found) => void): void {
  for (const k of model.incompleteEffects) {
    record({ invariant: 'effects-have-completions', kind: 'effect-without-completion', state: -1, move: -1, detail: `effect kind "${k}" declares no on_ok/on_failure completion` });
  }
  const declared = new Set(model.wf.effects.map((e) => e.kind));
  model.wf.transitions.forEach((t, ti) => {
    for (const e of t.emit)
      if (!declared.has(e))
        record({ invariant: 'effects-declared', kind: 'undeclared-effect', state: -1, move: -1, detail: `transitions[${ti}] emits "${e}", which is not declared under effects` });
  });
}

/** The result: violations in declaration order (the state cap first), each with its shortest trace, and the counts. */
function verdict(model: Model, space: StateSpace, moves: Moves, search: SearchCounts, stateCap: number, found: Map<string, Found>, started: number): CheckResult {
  const { moveAction, moveData } = moves;
  const { paths, terminals, capped } = search;
  const violations: Violation[] = [];
  if (capped) violations.push({ invariant: 'state-cap', kind: 'state-cap', trace: [], detail: `not exhaustive: state cap ${stateCap} reached` });
  const order = [...model.wf.invariants.map((x) => x.name), ...Object.keys(BUILTIN_KIND)];
  const sorted = [...found.values()].sort((a, b) => order.indexOf(a.invariant) - order.indexOf(b.invariant));
  for (const f of sorted) violations.push(buildViolation(model, space, f, moveAction, moveData));

  const admitted = violations.length === 0;
  const name = model.wf.name;
  return {
    admitted,
    name,
    line: admitted ? `admitted: ${name} — paths explored: ${paths} · states seen: ${space.count} · exhaustive within declared domains` : `REFUSED: ${name}`,
    pathsExplored: paths,
    statesSeen: space.count,
    terminalStates: terminals,
    violations,
    exhaustive: !capped,
    elapsedMs: performance.now() - started,
  };
}

/**
 * Render a result as the verdict lines: the admitted line, or `REFUSED: NAME` and, per violated
 * invariant, its name and numbered trace steps (`ACTION {data} → changes; emitted kinds`).
 */
export function formatCheckResult(result: CheckResult): string {
  if (result.admitted) return `${result.line}\n`;
  const out = [result.line];
  for (const v of result.violations) {
    if (v.kind === 'state-cap') {
      out.push(`  ${v.detail ?? 'not exhaustive: state cap reached'}`);
      continue;
    }
    out.push(`  ${v.invariant}`);
    if (v.detail) out.push(`    (${v.detail})`);
    v.trace.forEach((s, i) => {
      if (v.cycleStart === i) out.push('    -- cycle: the following steps repeat forever --');
      out.push(`    ${i + 1}. ${formatStep(s)}`);
    });
  }
  return `${out.join('\n')}\n`;
}

/** One trace step as text: `ACTION {k: v} → state: a → b, x: 0 → 1; emitted k1, k2`. */
export function formatStep(s: TraceStep): string {
  const data = Object.keys(s.data).length
    ? ` {${Object.entries(s.data)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join(', ')}}`
    : '';
  const changes = s.changes.length ? s.changes.map((c) => `${c.variable}: ${String(c.from)} → ${String(c.to)}`).join(', ') : 'no change';
  const emitted = s.emitted.length ? `; emitted ${s.emitted.join(', ')}` : '';
  return `${s.action}${data} → ${changes}${emitted}`;
}

function buildViolation(model: Model, space: StateSpace, f: Found, moveAction: number[], moveData: Int32Array[]): Violation {
  const v: Violation = { invariant: f.invariant, kind: f.kind, trace: [] };
  if (f.detail) v.detail = f.detail;
  if (f.state < 0) return v;
  const pathStates: number[] = [];
  for (let s = f.state; s > 0; s = space.parent[s]!) pathStates.push(s);
  pathStates.reverse();
  const vec = new Int32Array(space.width);
  space.decode(0, vec);
  const stepTo = (mv: number): void => {
    v.trace.push(traceStep(model, vec, moveAction[mv]!, moveData[mv]!));
  };
  for (const s of pathStates) {
    stepTo(space.parentMove[s]!);
    space.decode(s, vec);
  }
  if (f.move >= 0) stepTo(f.move);
  if (f.cycle) {
    v.cycleStart = v.trace.length;
    const cyc = f.cycle;
    for (let k = 0; k < cyc.length; k++) {
      const from = cyc[k]!;
      const to = cyc[(k + 1) % cyc.length]!;
      space.decode(from, vec);
      const mv = space.moveBetween(from, to);
      stepTo(mv);
    }
  }
  return v;
}

/** Describe firing move (action, data) from workflow vector `vec` as a trace step. */
function traceStep(model: Model, vec: Int32Array, action: number, d: Int32Array): TraceStep {
  const out = new Int32Array(vec.length);
  const t = fire(model, vec, action, d, out);
  const a = model.actions[action]!;
  const data: Record<string, Value> = {};
  a.fields.forEach((f, i) => {
    data[f.name] = decodeValue(f.type, d[i]!);
  });
  const step: TraceStep = { action: a.name, data, emitted: [], changes: [] };
  if (t < 0) return step;
  step.emitted = [...model.transitions[t]!.emitNames];
  model.slots.forEach((s, i) => {
    if (out[i] !== vec[i]) step.changes.push({ variable: s.name, from: decodeValue(s.type, vec[i]!), to: decodeValue(s.type, out[i]!) });
  });
  return step;
}
