/**
 * Monitor automata: one small automaton per invariant, run in lock-step with the workflow.
 *
 * Each step of the workflow produces a sequence of events: its action, then each emitted effect
 * kind, in order. Every monitor reads those events and keeps one number (a slot of the checker's
 * state vector): `inScope * patSize + s`, where `s` is the pattern's own state:
 *
 * | pattern            | s                          | violation                                   |
 * |--------------------|----------------------------|---------------------------------------------|
 * | `never`            | always 0                   | the event occurs in scope                    |
 * | `at_most N`        | occurrences so far (0..N)  | the (N+1)-th occurrence in one window         |
 * | `requires_before`  | bitmask of required events | the event occurs before all requirements     |
 * |                    | seen since window/reset    |                                              |
 * | `eventually_after` | 1 while an obligation is   | the run terminates (or the window closes)    |
 * |                    | open                       | with an obligation open                      |
 *
 * Scopes: global (always in scope); `after X` (in scope from the first X on); `between X until
 * Y` (a window opens at X — resetting `s` — and closes at the next Y). Within one event the
 * order is: open the scope, then the pattern's roles (reset, requirements, trigger, discharge),
 * then close the scope. An event's `when` is evaluated on the state after the step.
 *
 * `terminates` has no automaton: the checker looks for a cycle in the reachable graph.
 */
import type { Compiled } from '../expression.js';
import type { EventRef, InvariantDecl, Workflow } from '../workflow-schema.js';

export const ROLE_OPEN = 0;
export const ROLE_CLOSE = 1;
export const ROLE_TRIGGER = 2;
export const ROLE_REQUIRE = 3;
export const ROLE_RESET = 4;
export const ROLE_THEN = 5;

/** "This monitor sees this role" — attached to a transition, in event order. */
export interface MonitorOp {
  monitor: number;
  role: number;
  /** For ROLE_REQUIRE: which requirement. */
  bit: number;
  /** The event ref's `when`, compiled for this transition's action; null = always. */
  cond: Compiled | null;
}

/** An invariant compiled into an automaton. */
export interface MonitorModel {
  index: number;
  name: string;
  invariant: Exclude<InvariantDecl, { pattern: 'terminates' }>;
  scoped: boolean;
  /** Number of pattern states. */
  patSize: number;
  /** Number of monitor states (2 * patSize when scoped). */
  size: number;
  initial: number;
  /** at_most: the bound. requires_before: the mask with every requirement seen. */
  bound: number;
}

/** Sentinel returned by {@link monitorStep} on a violation. */
export const VIOLATION = -1;

/** What monitor compilation reads of a compiled model: the workflow, action names, and per transition its action and emitted effects. */
export interface MonitorSource {
  wf: Workflow;
  actions: ReadonlyArray<{ name: string }>;
  /** Per transition: its action's index, and per emitted kind the effect index (-1: undeclared) and name. */
  transitions: ReadonlyArray<{ action: number; emits: readonly number[]; emitNames: readonly string[] }>;
}

/** The compiled monitors, and per transition (same index as the source's) its monitor updates in event order. */
export interface CompiledMonitors {
  monitors: MonitorModel[];
  ops: MonitorOp[][];
}

/**
 * Compile the workflow's invariants (except `terminates`) into monitors and, per transition, the
 * event roles it plays for them (the action first, then its emits). `compileModel` attaches the
 * ops to its transitions.
 *
 * @param compileWhen compiles an event ref's `when` for a transition's action (index) at a field path.
 * @throws what `compileWhen` throws for a bad `when` expression (every `when` is compiled at least once).
 */
export function compileMonitors(source: MonitorSource, compileWhen: (path: string, src: string, action: number | null) => Compiled): CompiledMonitors {
  const wf = source.wf;
  const monitors: MonitorModel[] = [];
  const ops: MonitorOp[][] = source.transitions.map(() => []);
  wf.invariants.forEach((inv, invIndex) => {
    if (inv.pattern === 'terminates') return;
    const scoped = inv.scope.kind !== 'global';
    let patSize = 1;
    let bound = 0;
    if (inv.pattern === 'at_most') {
      patSize = inv.count + 1;
      bound = inv.count;
    } else if (inv.pattern === 'requires_before') {
      patSize = 1 << inv.requires.length;
      bound = patSize - 1;
    } else if (inv.pattern === 'eventually_after') patSize = 2;
    const initial = inv.scope.kind === 'between' && inv.scope.initially_open ? patSize : 0;
    const m: MonitorModel = { index: monitors.length, name: inv.name, invariant: inv, scoped, patSize, size: scoped ? 2 * patSize : patSize, initial, bound };
    monitors.push(m);

    const base = `invariants[${invIndex}]`;
    const field = inv.pattern;
    const refs: Array<{ ref: EventRef; role: number; bit: number; path: string }> = [];
    if (inv.scope.kind === 'after') refs.push({ ref: inv.scope.after, role: ROLE_OPEN, bit: 0, path: `${base}.scope.after` });
    if (inv.scope.kind === 'between') refs.push({ ref: inv.scope.between, role: ROLE_OPEN, bit: 0, path: `${base}.scope.between` });
    if (inv.pattern === 'requires_before') {
      if (inv.reset_by) refs.push({ ref: inv.reset_by, role: ROLE_RESET, bit: 0, path: `${base}.${field}.reset_by` });
      for (const [bit, r] of inv.requires.entries()) refs.push({ ref: r, role: ROLE_REQUIRE, bit, path: `${base}.${field}.requires[${bit}]` });
    }
    refs.push({ ref: inv.event, role: ROLE_TRIGGER, bit: 0, path: inv.pattern === 'never' ? `${base}.never` : `${base}.${field}.event` });
    if (inv.pattern === 'eventually_after') refs.push({ ref: inv.then, role: ROLE_THEN, bit: 0, path: `${base}.${field}.then` });
    if (inv.scope.kind === 'between') refs.push({ ref: inv.scope.until, role: ROLE_CLOSE, bit: 0, path: `${base}.scope.until` });

    source.transitions.forEach((t, ti) => {
      const events: Array<{ name: string; tool: string | null }> = [
        { name: source.actions[t.action]!.name, tool: null },
        ...t.emitNames.map((k, i) => ({ name: k, tool: t.emits[i]! >= 0 ? wf.effects[t.emits[i]!]!.tool : null })),
      ];
      for (const ev of events) {
        for (const r of refs) {
          const hit = r.ref.names.includes(ev.name) || (ev.tool !== null && r.ref.tools.includes(ev.tool));
          if (!hit) continue;
          const cond = r.ref.when === null ? null : compileWhen(`${r.path}.when`, r.ref.when, t.action);
          ops[ti]!.push({ monitor: m.index, role: r.role, bit: r.bit, cond });
        }
      }
    });
    // Compile every `when` at least once so that a bad expression is reported even if no transition matches.
    for (const r of refs) if (r.ref.when !== null) compileWhen(`${r.path}.when`, r.ref.when, null);
  });
  return { monitors, ops };
}

/**
 * One monitor reads one event role. `x` is the monitor's number; returns the next number, or
 * {@link VIOLATION}.
 */
export function monitorStep(m: MonitorModel, x: number, role: number, bit: number): number {
  const p = m.patSize;
  let inScope = !m.scoped || x >= p;
  let s = m.scoped && x >= p ? x - p : x;
  const inv = m.invariant;
  if (role === ROLE_OPEN) {
    if (inScope) return x;
    return p; // window opens with s = 0
  }
  if (role === ROLE_CLOSE) {
    if (!inScope) return x;
    if (inv.pattern === 'eventually_after' && s === 1) return VIOLATION;
    return 0;
  }
  if (!inScope) return x;
  switch (inv.pattern) {
    case 'never':
      return VIOLATION;
    case 'at_most':
      if (s >= m.bound) return VIOLATION;
      s += 1;
      break;
    case 'requires_before':
      if (role === ROLE_RESET) s = 0;
      else if (role === ROLE_REQUIRE) s |= 1 << bit;
      else if (s !== m.bound) return VIOLATION;
      break;
    case 'eventually_after':
      s = role === ROLE_TRIGGER ? 1 : 0;
      break;
  }
  inScope = true;
  return m.scoped ? p + s : s;
}

/** True when monitor number `x` holds an open `eventually_after` obligation (a violation if the run ends here). */
export function obligationOpen(m: MonitorModel, x: number): boolean {
  if (m.invariant.pattern !== 'eventually_after') return false;
  if (m.scoped) return x === m.patSize + 1;
  return x === 1;
}
