/**
 * The data shape of a workflow (what `workflow.yaml` holds once validated).
 *
 * A workflow is data only: finite variables, actions with finite data domains, guarded
 * transitions between control states, a closed vocabulary of effect kinds bound to tools, and
 * invariants written as specification patterns. Nothing in it is JavaScript; guards and
 * assignments are strings in the closed expression language of `workflows/expression.ts`.
 * The YAML field names are the ones below (snake_case), so a file and its typed value read alike.
 * Plans compiled by Polly build this object directly and pass it through `validateWorkflow`.
 */

/** A value a variable, an action datum or an input field can hold. */
export type Value = string | number | boolean;

/** A finite domain: an enum (closed list of names), a bool, or a bounded integer [min, max]. */
export type Domain = { type: 'enum'; values: string[] } | { type: 'bool' } | { type: 'int'; min: number; max: number };

/** A workflow variable: a finite domain and its initial value. */
export type VariableDecl = Domain & { name: string; initial: Value };

/**
 * How a real value (a tool's result) maps onto a data field's checked domain before the action is
 * applied. Every rule's image lies inside the field's domain by construction (the loader checks
 * each target), so the checker's exhaustive exploration of the domain covers every mapped value.
 * - `saturate` (int): clamp to [min, max] (e.g. a count of 5 on `int 0..2` is 2: "many");
 * - `buckets` (int): the value of the last bucket whose `at_least` ≤ the real value (ascending);
 *   a value below the first bucket is not mapped (and is refused as outside the domain);
 * - `rename` (enum): a real value listed in `values` maps to its target; any other real value maps
 *   to `otherwise` when set, else stays (and is refused unless it is in the domain).
 */
export type DataMap =
  | { kind: 'saturate' }
  | { kind: 'buckets'; buckets: Array<{ at_least: number; value: number }> }
  | { kind: 'rename'; values: Record<string, string>; otherwise: string | null };

/** An action's data field: a finite domain, and optionally how real values map onto it. */
export type DataField = Domain & { name: string; map?: DataMap };

/** An action (an external input: a completion report, a human answer, a signal) and its data. */
export interface ActionDecl {
  name: string;
  /** Data fields in declaration order; the checker enumerates every combination. */
  data: DataField[];
  /**
   * Reported fields that are not data fields: `refuse` (default) rejects the report; `payload`
   * keeps them in the journal (with the real values of mapped fields) but never in the run's state.
   */
  extra?: 'refuse' | 'payload';
}

/** Retry policy of an effect kind, applied by the runtime (invisible to the state model). */
export interface RetryPolicy {
  /** Attempts including the first (>= 1). */
  max_attempts: number;
  /** Seconds between attempts. */
  backoff_seconds: number;
  /** Seconds a work order's lease lasts before it is re-offered. */
  lease_seconds: number;
}

/**
 * An effect kind: a work order handed to an agent, bound to one tool. Its completion actions are
 * what the runtime applies when the order is reported: `on_ok` (success), `on_failure` (a
 * permanent failure, e.g. a human's denial: a result, not a fault), `on_exhausted` (retries used up).
 */
export interface EffectDecl {
  kind: string;
  tool: string;
  on_ok: string | null;
  on_failure: string | null;
  on_exhausted: string | null;
  retry: RetryPolicy;
}

/**
 * A guarded transition. It fires on `action` when the control state is in `from` (`'*'`: any
 * non-terminal state) and `when` holds; `set` assigns variables simultaneously (right-hand sides
 * read the state before the step), the control state moves to `to` (null: stays), and `emit`
 * lists the effect kinds handed out, in order. For one action and one data valuation the first
 * enabled transition in document order fires (so the step is deterministic).
 */
export interface TransitionDecl {
  action: string;
  from: string[] | '*';
  to: string | null;
  /** Guard (expression, bool); null = true. Reads variables, `state` and `data.<field>`. */
  when: string | null;
  /** variable → expression (or a literal; an enum variable also accepts a bare value name). */
  set: Record<string, Value>;
  emit: string[];
}

/**
 * An event pattern used by invariants: names of actions or effect kinds, and/or every effect
 * bound to one of `tools`; optionally only when `when` holds in the state after the step (with
 * the step's action data visible as `data.<field>`).
 */
export interface EventRef {
  names: string[];
  tools: string[];
  when: string | null;
}

/** Where an invariant applies. `after`: from the first X on. `between`/`until`: each window that opens at X and closes at the next Y (a window still open when the run ends or the search stops counts too). */
export type Scope =
  | { kind: 'global' }
  | { kind: 'after'; after: EventRef }
  | { kind: 'between'; between: EventRef; until: EventRef /** The first window is open from the start of the run. */; initially_open: boolean };

/**
 * An invariant as a specification pattern (Dwyer et al.), with a name a user can agree to:
 * - `never`: the event never occurs (in scope).
 * - `requires_before`: every occurrence of `event` is preceded (in scope, since the last
 *   `reset_by`) by an occurrence of each of `requires`.
 * - `at_most`: at most `count` occurrences of `event` (per scope window).
 * - `eventually_after`: every occurrence of `event` is followed by `then` before the run
 *   terminates (or the window closes). Finite runs only: infinite runs are excluded by
 *   `terminates`, or by the always-on check that a terminal state stays reachable.
 * - `terminates`: every path terminates — the reachable state graph has no cycle.
 */
export type InvariantDecl =
  | { name: string; pattern: 'never'; event: EventRef; scope: Scope }
  | { name: string; pattern: 'requires_before'; event: EventRef; requires: EventRef[]; reset_by: EventRef | null; scope: Scope }
  | { name: string; pattern: 'at_most'; event: EventRef; count: number; scope: Scope }
  | { name: string; pattern: 'eventually_after'; event: EventRef; then: EventRef; scope: Scope }
  | { name: string; pattern: 'terminates'; scope: Scope };

/** An input field of the run (validated at start; the key template reads them). */
export interface InputField {
  name: string;
  type: 'string' | 'int' | 'bool';
  /** For strings: a regular expression the whole value must match. */
  pattern: string | null;
}

/**
 * Bindings that tell {@link withPollyGuarantees} which names of this workflow play Polly's roles.
 * One entry per task; a single-task workflow (polly-task) has one. A compiled plan names each
 * task's own variables and actions (e.g. `t1_implementer`, `T1_TESTS_GREEN`).
 */
export interface PollyBindings {
  /** Actions that open / close a Brain turn; null = the whole run is one turn. */
  turn: { start: string[]; end: string[] } | null;
  tasks: Array<{
    name: string;
    /** Enum variable holding the implementer's vendor. */
    implementer_vendor: string;
    /** Enum variable holding the reviewer's vendor (same values as the implementer's). */
    reviewer_vendor: string;
    /** Actions meaning "Polly ran the acceptance commands and they passed". */
    tests_green: string[];
    /** Actions meaning "the cross-review finished with zero blocking findings". */
    review_clean: string[];
    /** Actions after which tests and review must pass again (e.g. blocking findings, red tests). */
    invalidated_by: string[];
    /** This task's effect kinds; empty = every effect of the workflow. */
    effects: string[];
  }>;
}

/** A validated workflow. */
export interface Workflow {
  name: string;
  description: string;
  /** The file it came from (or a label such as `plan:<id>` for compiled plans). */
  file: string;
  input: InputField[];
  /** Run identity template over input fields, e.g. `brief:{channel}:{day}`; null = no key. */
  key: string | null;
  states: string[];
  initial: string;
  terminal: string[];
  variables: VariableDecl[];
  actions: ActionDecl[];
  effects: EffectDecl[];
  transitions: TransitionDecl[];
  invariants: InvariantDecl[];
  polly: PollyBindings | null;
  /** Field path (e.g. `transitions[3].when`) → 1-based line and column in `file`, when known. */
  positions: Record<string, { line: number; column: number }>;
}

/** One step of a counterexample trace. */
export interface TraceStep {
  action: string;
  data: Record<string, Value>;
  /** Effect kinds emitted by the step, in order. */
  emitted: string[];
  /** Control state and variables that changed (`state` is the control state). */
  changes: Array<{ variable: string; from: Value; to: Value }>;
}
