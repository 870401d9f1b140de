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
  /** The seed's first line: `admitted: NAME — …` or `REFUSED: NAME`. */
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
  const { nslots, width } = space;
  const monitors = model.monitors;
  const found = new Map<string, Found>();
  const record = (f: Found): void => {
    if (!found.has(f.invariant)) found.set(f.invariant, f);
  };

  // Moves: every (action, valuation) pair, numbered.
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
    sel.allowed.forEach((ok, v) => { if (ok) buckets[k]![v]!.push(mv); });
  });
  const bucketArrays = buckets.map((b) => b.map((list) => Int32Array.from(list)));
  const alwaysArr = Int32Array.from(always);
  const todo = new Int32Array(moveAction.length);
  const incomplete = new Set(model.incompleteEffects);
  const incompleteIdx = new Set(model.wf.effects.map((e, i) => (incomplete.has(e.kind) ? i : -1)).filter((i) => i >= 0));
  const eventuallyMonitors = monitors.filter((m) => m.invariant.pattern === 'eventually_after');

  const cur = new Int32Array(width);
  const next = new Int32Array(width);
  const init = new Int32Array(width);
  init.set(model.initial);
  monitors.forEach((m, i) => { init[nslots + i] = m.initial; });
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
        record({ invariant: 'within-declared-domains', kind: 'out-of-domain', state: i, move: mv, detail: `transitions[${-t - 2}] assigns a value outside a variable's declared domain` });
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
        if (same) record({ invariant: 'no-emission-on-identity-transition', kind: 'emission-on-identity', state: i, move: mv, detail: `transitions[${t}] emits ${tr.emitNames.join(', ')} without changing the state` });
        for (let k = 0; k < tr.emits.length; k++) {
          const e = tr.emits[k]!;
          if (e < 0) record({ invariant: 'effects-declared', kind: 'undeclared-effect', state: i, move: mv, detail: `transitions[${t}] emits "${tr.emitNames[k]}", which is not declared under effects` });
          else if (incompleteIdx.has(e)) record({ invariant: 'effects-have-completions', kind: 'effect-without-completion', state: i, move: mv, detail: `effect kind "${tr.emitNames[k]}" declares no on_ok/on_failure completion: the run would wait forever` });
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
          if (obligationOpen(m, next[nslots + m.index]!)) record({ invariant: m.name, kind: 'eventually_after', state: i, move: mv, detail: 'the run terminates with the obligation still open' });
        }
      }
      const j = space.insert(next);
      space.addEdge(j, i, mv);
    }
    if (enabled === 0) record({ invariant: 'deadlock-free', kind: 'deadlock', state: i, move: -1, detail: `no action is enabled in non-terminal state "${model.wf.states[cur[0]!]}"` });
    if (space.count > stateCap) {
      capped = true;
      break;
    }
  }
  space.endEdges(expanded);

  if (!capped) {
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
        record({ invariant: 'terminal-always-reachable', kind: 'no-terminal-reachable', state: i, move: -1, detail: 'from this state no terminal state can be reached (a loop or trap with no exit)' });
        break;
      }
    }
    const term = model.wf.invariants.find((x) => x.pattern === 'terminates');
    if (term && !topo.complete) {
      const cycle = space.findCycle(back!, topo.indeg);
      record({ invariant: term.name, kind: 'terminates', state: cycle[0]!, move: -1, cycle, detail: 'a cycle: this run can go on forever' });
    }
  }
  // Static rules also refuse what no reachable step showed.
  for (const k of model.incompleteEffects) {
    record({ invariant: 'effects-have-completions', kind: 'effect-without-completion', state: -1, move: -1, detail: `effect kind "${k}" declares no on_ok/on_failure completion` });
  }
  const declared = new Set(model.wf.effects.map((e) => e.kind));
  model.wf.transitions.forEach((t, ti) => {
    for (const e of t.emit) if (!declared.has(e)) record({ invariant: 'effects-declared', kind: 'undeclared-effect', state: -1, move: -1, detail: `transitions[${ti}] emits "${e}", which is not declared under effects` });
  });

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
 * Render a result as the seed's lines: the admitted line, or `REFUSED: NAME` and, per violated
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
  const data = Object.keys(s.data).length ? ` {${Object.entries(s.data).map(([k, v]) => `${k}: ${String(v)}`).join(', ')}}` : '';
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
  a.fields.forEach((f, i) => { data[f.name] = decodeValue(f.type, d[i]!); });
  const step: TraceStep = { action: a.name, data, emitted: [], changes: [] };
  if (t < 0) return step;
  step.emitted = [...model.transitions[t]!.emitNames];
  model.slots.forEach((s, i) => {
    if (out[i] !== vec[i]) step.changes.push({ variable: s.name, from: decodeValue(s.type, vec[i]!), to: decodeValue(s.type, out[i]!) });
  });
  return step;
}

/** Packed visited set, BFS order, parent pointers and the forward edge list (CSR). */
interface StateSpace {
  nslots: number;
  width: number;
  count: number;
  parent: Int32Array;
  parentMove: Int32Array;
  insert(vec: Int32Array): number;
  decode(i: number, out: Int32Array): void;
  control(i: number): number;
  beginEdges(i: number): void;
  addEdge(to: number, from: number, move: number): void;
  endEdges(expanded: number): void;
  reverse(): { start: Int32Array; to: Int32Array };
  /** Kahn's algorithm: `order` holds the peeled states; `complete` when the graph is acyclic; `indeg` > 0 marks states on or after a cycle. */
  topologicalOrder(): { order: Int32Array; complete: boolean; indeg: Int32Array };
  anySuccessor(state: number, mark: Uint8Array): boolean;
  findCycle(back: { start: Int32Array; to: Int32Array }, indeg: Int32Array): number[];
  moveBetween(from: number, to: number): number;
}

/**
 * Bit-packed state storage: each slot gets ceil(log2(size)) bits inside 32-bit words (a slot
 * never straddles words); an open-addressing hash table of state indexes; BFS order = index order.
 */
function createStateSpace(model: Model): StateSpace {
  const nslots = model.slots.length;
  const sizes = [...model.slots.map((s) => s.max - s.min + 1), ...model.monitors.map((m) => m.size)];
  const mins = [...model.slots.map((s) => s.min), ...model.monitors.map(() => 0)];
  const width = sizes.length;
  const wordOf = new Int32Array(width);
  const shiftOf = new Int32Array(width);
  const maskOf = new Int32Array(width);
  const minOf = Int32Array.from(mins);
  let word = 0;
  let used = 0;
  sizes.forEach((size, s) => {
    const bits = Math.max(1, Math.ceil(Math.log2(size)));
    if (used + bits > 32) {
      word++;
      used = 0;
    }
    wordOf[s] = word;
    shiftOf[s] = used;
    maskOf[s] = bits >= 32 ? -1 : (1 << bits) - 1;
    used += bits;
  });
  const kw = word + 1;
  let cap = 1 << 12;
  let keys = new Int32Array(cap * kw);
  let parent = new Int32Array(cap);
  let parentMove = new Int32Array(cap);
  let edgeStart = new Int32Array(cap + 1);
  let edgeTo = new Int32Array(1 << 14);
  let edgeMoves = new Int32Array(1 << 14);
  let edgeCount = 0;
  // Open addressing; each entry is [state index + 1, packed key words...] so that a probe reads
  // one place in memory.
  const stride = kw + 1;
  let tableBits = 14;
  let table = new Int32Array((1 << tableBits) * stride);
  let tableMask = (1 << tableBits) - 1;
  const packed = new Int32Array(kw);
  let count = 0;
  let lastInsertNew = false;

  const hashOf = (src: Int32Array, base: number): number => {
    let h = 0x811c9dc5 | 0;
    for (let w = 0; w < kw; w++) h = Math.imul(h ^ src[base + w]!, 0x01000193);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    return h;
  };
  const growTable = (): void => {
    tableBits++;
    table = new Int32Array((1 << tableBits) * stride);
    tableMask = (1 << tableBits) - 1;
    for (let i = 0; i < count; i++) {
      let h = hashOf(keys, i * kw) & tableMask;
      while (table[h * stride] !== 0) h = (h + 1) & tableMask;
      const at = h * stride;
      table[at] = i + 1;
      for (let w = 0; w < kw; w++) table[at + 1 + w] = keys[i * kw + w]!;
    }
  };
  const growStates = (): void => {
    cap *= 2;
    const k2 = new Int32Array(cap * kw);
    k2.set(keys);
    keys = k2;
    const p2 = new Int32Array(cap);
    p2.set(parent);
    parent = p2;
    const m2 = new Int32Array(cap);
    m2.set(parentMove);
    parentMove = m2;
    const e2 = new Int32Array(cap + 1);
    e2.set(edgeStart);
    edgeStart = e2;
    space.parent = parent;
    space.parentMove = parentMove;
  };

  const space: StateSpace = {
    nslots,
    width,
    count: 0,
    parent,
    parentMove,
    insert(vec) {
      for (let w = 0; w < kw; w++) packed[w] = 0;
      for (let s = 0; s < width; s++) {
        const w = wordOf[s]!;
        packed[w] = packed[w]! | ((vec[s]! - minOf[s]!) << shiftOf[s]!);
      }
      let h = hashOf(packed, 0) & tableMask;
      for (;;) {
        const at = h * stride;
        const slot = table[at]!;
        if (slot === 0) break;
        let eq = true;
        for (let w = 0; w < kw; w++) {
          if (table[at + 1 + w] !== packed[w]) {
            eq = false;
            break;
          }
        }
        if (eq) {
          lastInsertNew = false;
          return slot - 1;
        }
        h = (h + 1) & tableMask;
      }
      if (count === cap) growStates();
      const idx = count++;
      keys.set(packed, idx * kw);
      const at = h * stride;
      table[at] = idx + 1;
      for (let w = 0; w < kw; w++) table[at + 1 + w] = packed[w]!;
      space.count = count;
      lastInsertNew = true;
      if (count * 2 > tableMask + 1) growTable();
      return idx;
    },
    decode(i, out) {
      const base = i * kw;
      for (let s = 0; s < width; s++) out[s] = ((keys[base + wordOf[s]!]! >>> shiftOf[s]!) & maskOf[s]!) + minOf[s]!;
    },
    control(i) {
      return ((keys[i * kw + wordOf[0]!]! >>> shiftOf[0]!) & maskOf[0]!) + minOf[0]!;
    },
    beginEdges(i) {
      edgeStart[i] = edgeCount;
    },
    addEdge(to, from, move) {
      if (lastInsertNew) {
        parent[to] = from;
        parentMove[to] = move;
      }
      if (edgeCount === edgeTo.length) {
        const e2 = new Int32Array(edgeTo.length * 2);
        e2.set(edgeTo);
        edgeTo = e2;
        const m2 = new Int32Array(edgeMoves.length * 2);
        m2.set(edgeMoves);
        edgeMoves = m2;
      }
      edgeMoves[edgeCount] = move;
      edgeTo[edgeCount++] = to;
    },
    endEdges(expanded) {
      // States never expanded (after a cap) get empty edge lists.
      for (let i = expanded; i <= count; i++) edgeStart[i] = edgeCount;
    },
    reverse() {
      const start = new Int32Array(count + 1);
      for (let e = 0; e < edgeCount; e++) start[edgeTo[e]! + 1]!++;
      for (let i = 0; i < count; i++) start[i + 1] = start[i + 1]! + start[i]!;
      const fill = start.slice(0, count);
      const to = new Int32Array(edgeCount);
      for (let s = 0; s < count; s++) {
        for (let e = edgeStart[s]!; e < edgeStart[s + 1]!; e++) to[fill[edgeTo[e]!]!++] = s;
      }
      return { start, to };
    },
    topologicalOrder() {
      const indeg = new Int32Array(count);
      for (let e = 0; e < edgeCount; e++) indeg[edgeTo[e]!]!++;
      const order = new Int32Array(count);
      let qh = 0;
      let qt = 0;
      for (let i = 0; i < count; i++) if (indeg[i] === 0) order[qt++] = i;
      while (qh < qt) {
        const st = order[qh++]!;
        for (let e = edgeStart[st]!; e < edgeStart[st + 1]!; e++) {
          const t = edgeTo[e]!;
          if (--indeg[t]! === 0) order[qt++] = t;
        }
      }
      return { order, complete: qt === count, indeg };
    },
    anySuccessor(st, mark) {
      for (let e = edgeStart[st]!; e < edgeStart[st + 1]!; e++) if (mark[edgeTo[e]!] === 1) return true;
      return false;
    },
    findCycle(back, indeg) {
      // Walk backwards through remaining states until one repeats: that is a cycle.
      let s = 0;
      while (indeg[s] === 0) s++;
      const seenAt = new Map<number, number>();
      const walk: number[] = [];
      while (!seenAt.has(s)) {
        seenAt.set(s, walk.length);
        walk.push(s);
        let p = -1;
        for (let e = back.start[s]!; e < back.start[s + 1]!; e++) {
          if (indeg[back.to[e]!]! > 0) {
            p = back.to[e]!;
            break;
          }
        }
        s = p;
      }
      const cycle = walk.slice(seenAt.get(s)!).reverse(); // forward order
      // Rotate so that the shallowest (lowest BFS index) state comes first.
      let best = 0;
      cycle.forEach((x, i) => { if (x < cycle[best]!) best = i; });
      return [...cycle.slice(best), ...cycle.slice(0, best)];
    },
    moveBetween(from, to) {
      for (let e = edgeStart[from]!; e < edgeStart[from + 1]!; e++) {
        if (edgeTo[e] === to) return edgeMoves[e]!;
      }
      throw new Error(`internal: no edge ${from} → ${to}`);
    },
  };
  return space;
}
