/**
 * The compiled step semantics of a workflow — the one function that both the checker and the
 * runtime call to move a run forward ({@link fire}).
 *
 * A state is an Int32Array "vector": slot 0 is the control state (index into `states`), slots
 * 1..n are the variables in declaration order (enum: value index, bool: 0/1, int: the value).
 * Action data is an Int32Array in the action's field order. The checker appends one slot per
 * monitor automaton after the workflow slots (see `monitors.ts`).
 */
import { ExpressionInFieldError, compileExpression, guardAtoms, type Compiled, type ExprType, type Symbol as ExprSymbol } from '../expression.js';
import { compileMonitors, type MonitorModel, type MonitorOp } from './monitors.js';
import type { Domain, Value, Workflow } from '../workflow-schema.js';

/** One slot of the state vector. */
export interface SlotInfo {
  name: string;
  type: ExprType;
  min: number;
  max: number;
}

/** A transition ready to fire. */
export interface CompiledTransition {
  index: number;
  action: number;
  /** fromMask[controlState] === 1 when the transition may fire from that state. */
  fromMask: Uint8Array;
  /** Target control state, or -1 to stay. */
  to: number;
  guard: Compiled | null;
  sets: Array<{ slot: number; fn: Compiled; min: number; max: number }>;
  /** Effect index per emitted kind (-1: undeclared kind). */
  emits: number[];
  emitNames: string[];
  /** Monitor updates for this transition's events, in event order (action first, then emits). */
  monitorOps: MonitorOp[];
}

/** An action with its data domain enumerated. */
export interface CompiledAction {
  index: number;
  name: string;
  fields: Array<{ name: string; type: ExprType; min: number; max: number }>;
  /** Every data valuation (the product of the field domains), in a fixed order. */
  valuations: Int32Array[];
  transitions: number[];
}

/** The compiled workflow. */
export interface Model {
  wf: Workflow;
  /** Slot 0 = control state, then variables. */
  slots: SlotInfo[];
  actions: CompiledAction[];
  transitions: CompiledTransition[];
  terminalMask: Uint8Array;
  initial: Int32Array;
  monitors: MonitorModel[];
  /** Effect kinds lacking a completion (`on_ok` and `on_failure` must both be declared). */
  incompleteEffects: string[];
  /**
   * Per action, a necessary condition for any of its transitions to fire: the slot must hold one
   * of `allowed` (from `from` lists and top-level `x == v` / `x in [..]` guard conjuncts); null
   * when nothing narrows it. The checker uses it to skip actions; `fire` stays the semantics.
   */
  selectors: Array<{ slot: number; allowed: Uint8Array } | null>;
}

const cache = new WeakMap<Workflow, Model>();

/** Type of a declared domain. */
export function domainType(d: Domain): ExprType {
  return d.type === 'enum' ? { kind: 'enum', values: d.values } : { kind: d.type };
}

function range(d: Domain): [number, number] {
  if (d.type === 'enum') return [0, d.values.length - 1];
  if (d.type === 'bool') return [0, 1];
  return [d.min, d.max];
}

/** Encode a value of domain `d` as a slot number. Returns null if it is outside the domain. */
export function encodeValue(d: Domain, v: unknown): number | null {
  if (d.type === 'enum') {
    const i = typeof v === 'string' ? d.values.indexOf(v) : -1;
    return i < 0 ? null : i;
  }
  if (d.type === 'bool') return typeof v === 'boolean' ? (v ? 1 : 0) : null;
  return typeof v === 'number' && Number.isInteger(v) && v >= d.min && v <= d.max ? v : null;
}

/** Decode a slot number of type `t` into a value. */
export function decodeValue(t: ExprType, n: number): Value {
  if (t.kind === 'enum') return t.values[n]!;
  if (t.kind === 'bool') return n !== 0;
  return n;
}

/**
 * Compile (once; cached per workflow object) the workflow's guards, assignments and invariants.
 * @throws ExpressionInFieldError for a bad expression (validateWorkflow turns it into a
 *   `workflow_invalid` error with file:line:column).
 */
export function compileModel(wf: Workflow): Model {
  const hit = cache.get(wf);
  if (hit) return hit;
  const slots: SlotInfo[] = [{ name: 'state', type: { kind: 'enum', values: wf.states }, min: 0, max: wf.states.length - 1 }];
  for (const v of wf.variables) {
    const [min, max] = range(v);
    slots.push({ name: v.name, type: domainType(v), min, max });
  }
  const slotOf = new Map(slots.map((s, i) => [s.name, i]));
  const stateIndex = new Map(wf.states.map((s, i) => [s, i]));

  const actions: CompiledAction[] = wf.actions.map((a, index) => {
    const fields = a.data.map((f) => {
      const [min, max] = range(f);
      return { name: f.name, type: domainType(f), min, max };
    });
    const valuations: Int32Array[] = [];
    const cur = new Int32Array(fields.length);
    const rec = (i: number): void => {
      if (i === fields.length) {
        valuations.push(cur.slice());
        return;
      }
      for (let x = fields[i]!.min; x <= fields[i]!.max; x++) {
        cur[i] = x;
        rec(i + 1);
      }
    };
    rec(0);
    return { index, name: a.name, fields, valuations, transitions: [] };
  });
  const actionIndex = new Map(actions.map((a) => [a.name, a.index]));

  const resolverFor =
    (action: CompiledAction | null) =>
    (name: string): ExprSymbol | null => {
      if (name.startsWith('data.')) {
        if (!action) return null;
        const f = action.fields.findIndex((x) => x.name === name.slice(5));
        return f < 0 ? null : { where: 'd', index: f, type: action.fields[f]!.type };
      }
      const s = slotOf.get(name);
      return s === undefined ? null : { where: 'v', index: s, type: slots[s]!.type };
    };
  const compileAt = (path: string, src: string, resolve: (n: string) => ExprSymbol | null, expected: ExprType): Compiled => {
    try {
      return compileExpression(src, resolve, expected);
    } catch (e) {
      throw ExpressionInFieldError.wrap(path, src, e);
    }
  };

  const effectIndex = new Map(wf.effects.map((e, i) => [e.kind, i]));
  const transitions: CompiledTransition[] = wf.transitions.map((t, index) => {
    const a = actions[actionIndex.get(t.action)!]!;
    const resolve = resolverFor(a);
    const fromMask = new Uint8Array(wf.states.length);
    if (t.from === '*')
      wf.states.forEach((s, i) => {
        fromMask[i] = wf.terminal.includes(s) ? 0 : 1;
      });
    else for (const s of t.from) fromMask[stateIndex.get(s)!] = 1;
    const guard = t.when === null ? null : compileAt(`transitions[${index}].when`, t.when, resolve, { kind: 'bool' });
    const sets = Object.entries(t.set).map(([name, value]) => {
      const slot = slotOf.get(name)!;
      const info = slots[slot]!;
      const path = `transitions[${index}].set.${name}`;
      let fn: Compiled;
      if (typeof value === 'number' || typeof value === 'boolean') {
        const lit = String(value);
        fn = compileAt(path, lit, resolve, info.type);
      } else if (info.type.kind === 'enum' && info.type.values.includes(value)) {
        const idx = info.type.values.indexOf(value);
        fn = () => idx;
      } else fn = compileAt(path, value, resolve, info.type);
      return { slot, fn, min: info.min, max: info.max };
    });
    const tr: CompiledTransition = {
      index,
      action: a.index,
      fromMask,
      to: t.to === null ? -1 : stateIndex.get(t.to)!,
      guard,
      sets,
      emits: t.emit.map((k) => effectIndex.get(k) ?? -1),
      emitNames: t.emit,
      monitorOps: [],
    };
    a.transitions.push(index);
    return tr;
  });

  const terminalMask = new Uint8Array(wf.states.length);
  for (const s of wf.terminal) terminalMask[stateIndex.get(s)!] = 1;
  const initial = new Int32Array(slots.length);
  initial[0] = stateIndex.get(wf.initial)!;
  wf.variables.forEach((v, i) => {
    initial[i + 1] = encodeValue(v, v.initial)!;
  });

  const model: Model = {
    wf,
    slots,
    actions,
    transitions,
    terminalMask,
    initial,
    monitors: [],
    selectors: [],
    incompleteEffects: wf.effects.filter((e) => e.on_ok === null || e.on_failure === null).map((e) => e.kind),
  };
  model.selectors = actions.map((a) => {
    let best: { slot: number; allowed: Uint8Array } | null = null;
    let bestCount = Infinity;
    const perTransition = a.transitions.map((ti) => {
      const t = transitions[ti]!;
      const m = new Map<number, Set<number>>();
      m.set(0, new Set(Array.from(t.fromMask).flatMap((x, i) => (x ? [i] : []))));
      const src = wf.transitions[ti]!.when;
      if (src !== null) {
        for (const atom of guardAtoms(src, resolverFor(a))) {
          const prev = m.get(atom.slot);
          const vals = new Set(atom.values);
          m.set(atom.slot, prev ? new Set([...prev].filter((x) => vals.has(x))) : vals);
        }
      }
      return m;
    });
    if (perTransition.length === 0) return { slot: 0, allowed: new Uint8Array(wf.states.length) };
    for (const slot of perTransition[0]!.keys()) {
      if (!perTransition.every((m) => m.has(slot))) continue;
      const info = slots[slot]!;
      const allowed = new Uint8Array(info.max - info.min + 1);
      for (const m of perTransition) for (const v of m.get(slot)!) allowed[v - info.min] = 1;
      const count = allowed.reduce((x, y) => x + y, 0);
      if (count < bestCount && count < allowed.length) {
        best = { slot, allowed };
        bestCount = count;
      }
    }
    return best;
  });
  const compiled = compileMonitors(model, (path, src, action) => compileAt(path, src, resolverFor(action === null ? null : actions[action]!), { kind: 'bool' }));
  model.monitors = compiled.monitors;
  transitions.forEach((t, ti) => {
    t.monitorOps = compiled.ops[ti]!;
  });
  cache.set(wf, model);
  return model;
}

/** `fire` result: no transition of the action is enabled for this state and data. */
export const NOT_ENABLED = -1;

/**
 * Fire `action` with data `d` from state vector `v`, writing the workflow slots of the next
 * state into `out` (slots beyond `model.slots.length` are left untouched).
 *
 * Semantics: the first transition of the action (in document order) whose `from` contains the
 * control state and whose guard holds fires; assignments read `v` (simultaneous); the control
 * state moves to `to`. Returns the transition index (>= 0), {@link NOT_ENABLED}, or
 * `-(index + 2)` when the transition would assign a value outside its variable's domain.
 */
export function fire(model: Model, v: Int32Array, action: number, d: Int32Array, out: Int32Array): number {
  const ts = model.actions[action]!.transitions;
  const ctl = v[0]!;
  for (let i = 0; i < ts.length; i++) {
    const t = model.transitions[ts[i]!]!;
    if (t.fromMask[ctl] === 0) continue;
    if (t.guard !== null && t.guard(v, d) === 0) continue;
    const n = model.slots.length;
    for (let k = 0; k < n; k++) out[k] = v[k]!;
    if (t.to >= 0) out[0] = t.to;
    const sets = t.sets;
    for (let k = 0; k < sets.length; k++) {
      const s = sets[k]!;
      const x = s.fn(v, d);
      if (x < s.min || x > s.max) return -(t.index + 2);
      out[s.slot] = x;
    }
    return t.index;
  }
  return NOT_ENABLED;
}
