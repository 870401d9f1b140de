/**
 * The runtime's view of a workflow: named states in, named states out. Every step goes through
 * `fire` in `model.ts`, the same function the checker explores, so a run can only do what the
 * checker admitted.
 */
import { PollyError } from '../../brain/core/errors.js';
import { NOT_ENABLED, compileModel, decodeValue, encodeValue, fire, type Model } from '../check/model.js';
import type { EffectDecl, Value, Workflow } from '../workflow-schema.js';

/** A run's workflow state: the control state and every variable by name. */
export interface RunState {
  state: string;
  vars: Record<string, Value>;
}

/** An effect handed out by a step: its declaration (tool, completions, retry policy). */
export type Effect = EffectDecl;

/** A step that happened. */
export interface StepApplied {
  state: RunState;
  emitted: Effect[];
  /** Index of the transition that fired (in `wf.transitions`). */
  transition: number;
}

/** A step that did not happen: an observable reject, not a fault. */
export interface StepRejected {
  rejected: string;
  code: 'unknown_action' | 'bad_data' | 'not_enabled' | 'terminal' | 'out_of_domain' | 'bad_state';
}

/**
 * Validate `input` against the workflow's input fields.
 * @throws PollyError `bad_input` naming the field, the value and the expected type/pattern.
 */
export function validateInput(wf: Workflow, input: Record<string, unknown>): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const k of Object.keys(input)) {
    if (!wf.input.some((f) => f.name === k)) {
      throw new PollyError('bad_input', `workflow ${wf.name}: unknown input field "${k}"; declared fields: ${wf.input.map((f) => f.name).join(', ') || 'none'}`, {
        details: { field: k },
      });
    }
  }
  for (const f of wf.input) {
    const v = input[f.name];
    const ok =
      f.type === 'string' ? typeof v === 'string' && (f.pattern === null || new RegExp(f.pattern).test(v)) : f.type === 'int' ? Number.isInteger(v) : typeof v === 'boolean';
    if (!ok) {
      throw new PollyError(
        'bad_input',
        `workflow ${wf.name}: input field "${f.name}" = ${JSON.stringify(v)} is not a valid ${f.type}${f.pattern ? ` matching /${f.pattern}/` : ''}. Pass a value of that form.`,
        { details: { field: f.name } },
      );
    }
    out[f.name] = v as Value;
  }
  return out;
}

/**
 * The run key: the workflow's key template with `{field}` replaced by validated input values
 * (the run's identity: starting twice with the same key attaches to the same run).
 * @throws PollyError `bad_input` as {@link validateInput}.
 */
export function runKey(wf: Workflow, input: Record<string, unknown>): string {
  const valid = validateInput(wf, input);
  return (wf.key ?? '').replace(/\{([^}]*)\}/g, (_m, name: string) => String(valid[name]));
}

/**
 * The initial state of a run (after validating `input`).
 * @throws PollyError `bad_input` as {@link validateInput}.
 */
export function initialState(wf: Workflow, input: Record<string, unknown> = {}): RunState {
  validateInput(wf, input);
  return toRunState(compileModel(wf), compileModel(wf).initial);
}

/** True when the run has ended. */
export function isTerminal(wf: Workflow, state: RunState): boolean {
  return wf.terminal.includes(state.state);
}

/** Every (action, data) that would fire a transition in `state`, in declaration order. */
export function enabledActions(wf: Workflow, state: RunState): Array<{ action: string; data: Record<string, Value> }> {
  const model = compileModel(wf);
  const vec = toVector(model, state);
  if (typeof vec === 'string') return [];
  const out = new Int32Array(vec.length);
  const result: Array<{ action: string; data: Record<string, Value> }> = [];
  for (const a of model.actions) {
    for (const d of a.valuations) {
      if (fire(model, vec, a.index, d, out) >= 0) {
        const data: Record<string, Value> = {};
        a.fields.forEach((f, i) => {
          data[f.name] = decodeValue(f.type, d[i]!);
        });
        result.push({ action: a.name, data });
      }
    }
  }
  return result;
}

/**
 * Apply `action` with `data` to `state`: the next state and the effects to hand out, or a reject
 * (unknown action, data outside the declared domain, no enabled transition, terminal run).
 */
export function applyAction(wf: Workflow, state: RunState, action: string, data: Record<string, unknown> = {}): StepApplied | StepRejected {
  const model = compileModel(wf);
  const a = model.actions.find((x) => x.name === action);
  if (!a) return { rejected: `unknown action "${action}"; declared: ${model.actions.map((x) => x.name).join(', ')}`, code: 'unknown_action' };
  const vec = toVector(model, state);
  if (typeof vec === 'string') return { rejected: vec, code: 'bad_state' };
  if (model.terminalMask[vec[0]!] === 1) return { rejected: `the run has ended in "${state.state}"`, code: 'terminal' };
  const extra = Object.keys(data).find((k) => !a.fields.some((f) => f.name === k));
  if (extra) return { rejected: `action ${action} has no data field "${extra}"`, code: 'bad_data' };
  const d = new Int32Array(a.fields.length);
  for (let i = 0; i < a.fields.length; i++) {
    const decl = wf.actions[a.index]!.data[i]!;
    const x = encodeValue(decl, data[decl.name]);
    if (x === null) return { rejected: `action ${action}: data.${decl.name} = ${JSON.stringify(data[decl.name])} is outside its declared domain`, code: 'bad_data' };
    d[i] = x;
  }
  const out = new Int32Array(vec.length);
  const t = fire(model, vec, a.index, d, out);
  if (t === NOT_ENABLED) return { rejected: `action ${action} does not apply in state "${state.state}"`, code: 'not_enabled' };
  if (t < 0) return { rejected: `transitions[${-t - 2}] would leave a variable's declared domain`, code: 'out_of_domain' };
  const tr = model.transitions[t]!;
  return { state: toRunState(model, out), emitted: tr.emits.filter((e) => e >= 0).map((e) => wf.effects[e]!), transition: t };
}

function toRunState(model: Model, vec: Int32Array): RunState {
  const vars: Record<string, Value> = {};
  model.slots.forEach((s, i) => {
    if (i > 0) vars[s.name] = decodeValue(s.type, vec[i]!);
  });
  return { state: model.wf.states[vec[0]!]!, vars };
}

/**
 * The variables `wf` declares that a stored run state does not hold: declared after the run began
 * (a run started under an earlier version of its workflow, e.g. one written by an older Polly).
 * The runtime and trace validation read each as its declared initial value, which is what the run
 * would hold had the variable been declared when it began and no step set it (a step that sets it
 * writes it into the state). Pure.
 */
export function variablesAddedSince(wf: Workflow, state: Pick<RunState, 'vars'>): Array<{ name: string; initial: Value }> {
  const vars = state.vars ?? {};
  return wf.variables.filter((v) => !Object.hasOwn(vars, v.name)).map((v) => ({ name: v.name, initial: v.initial }));
}

function toVector(model: Model, st: RunState): Int32Array | string {
  const vec = new Int32Array(model.slots.length);
  const c = model.wf.states.indexOf(st.state);
  if (c < 0) return `unknown control state "${st.state}"`;
  vec[0] = c;
  const vars = st.vars ?? {};
  for (let i = 0; i < model.wf.variables.length; i++) {
    const decl = model.wf.variables[i]!;
    // A variable declared after the run began holds its initial value (see variablesAddedSince).
    const x = encodeValue(decl, Object.hasOwn(vars, decl.name) ? vars[decl.name] : decl.initial);
    if (x === null) return `variable ${decl.name} = ${JSON.stringify(vars[decl.name])} is outside its declared domain`;
    vec[i + 1] = x;
  }
  return vec;
}
