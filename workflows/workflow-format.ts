/**
 * Validation of the workflow format: a plain object (parsed YAML, or built by the plan
 * compiler) → a {@link Workflow}, or a PollyError `workflow_invalid` naming
 * `file:line:column`, the field path (e.g. `transitions[3].when`) and what to do.
 *
 * YAML shape (see workflows/customer-brief/workflow.yaml for a complete example):
 *
 * ```yaml
 * name: customer-brief                  # [a-z0-9-]+
 * description: text
 * input: {channel: {type: string, pattern: "^#[a-z0-9-]+$"}}
 * key: "brief:{channel}"                # template over input fields: the run identity
 * states: [idle, gathering, ...]        # control states
 * initial: idle
 * terminal: [posted, denied]
 * variables: {tickets: {type: int, min: 0, max: 2, initial: 0}}
 * actions: {TICKETS_FETCHED: {data: {count: {type: int, min: 0, max: 2}}}, APPROVED: {}}
 *   # real data onto the checked domain: count: {type: int, min: 0, max: 2, map: saturate}
 *   #   map: saturate | {buckets: [{at_least: 0, value: 0}, {at_least: 3, value: 1}]}   (int)
 *   #   map: {values: {open: pending, new: pending}, otherwise: other}                  (enum)
 *   # extra: payload — other reported fields are journaled as payload, never state (default: refuse)
 * effects:
 *   post_brief: {tool: slack_send, on_ok: POSTED, on_failure: POST_FAILED, on_exhausted: POST_FAILED,
 *                retry: {max_attempts: 3, backoff_seconds: 30, lease_seconds: 300}}
 * transitions:
 *   - {action: APPROVED, from: review, to: posting, when: "tickets > 0", set: {x: "x + 1"}, emit: [post_brief]}
 * invariants:
 *   - {name: no-post-without-prior-approval, requires_before: {event: post_brief, requires: [APPROVED]}}
 *   - {name: one-post, at_most: {event: post_brief, count: 1}, scope: {between: START, until: DONE}}
 *     # scope: {between: X, until: Y, initially_open: true} — the first window is open from the start
 *     # events: a name, a list of names (any of), or {name(s): .., tool(s): .., when: "expr after the step"}
 *   - {name: never-merge, never: {tool: merge}}
 *   - {name: answered, eventually_after: {event: ask_approval, then: [APPROVED, DENIED]}}
 *   - {name: every-path-terminates, terminates: true}
 * polly: {tasks: [{name: task, implementer_vendor: implementer_vendor, ...}], turn: null}
 * ```
 */
import { PollyError } from '../brain/core/errors.js';
import { ExpressionInFieldError } from './expression.js';
import { compileModel } from './check/model.js';
import type {
  ActionDecl,
  DataMap,
  Domain,
  EffectDecl,
  EventRef,
  InputField,
  InvariantDecl,
  PollyBindings,
  Scope,
  TransitionDecl,
  Value,
  VariableDecl,
  Workflow,
} from './workflow-schema.js';

type Positions = Workflow['positions'];

/** Where a workflow object came from, for error messages. */
export interface SourceInfo {
  file: string;
  positions?: Positions;
  /** Expression fields: the offset of the expression's first character in the source line, when quoted (+1). */
  quoteOffsets?: Record<string, number>;
}

const NAME_RE = /^[a-z0-9][a-z0-9-]*$/;
const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED = new Set(['state', 'data', 'true', 'false', 'in']);

/** Build the `workflow_invalid` error for `path`, with the nearest known position. */
export function workflowError(src: SourceInfo, path: string, message: string, column = 0, atKey = false): PollyError {
  const pos = (atKey ? src.positions?.[`${path}@key`] : undefined) ?? lookup(src.positions ?? {}, path);
  const where = pos ? `${src.file}:${pos.line}:${pos.column + column}` : src.file;
  return new PollyError('workflow_invalid', `${where}: ${path || '(top level)'}: ${message}`, {
    details: { file: src.file, path, line: pos?.line ?? null, column: pos ? pos.column + column : null },
  });
}

function lookup(positions: Positions, path: string): { line: number; column: number } | undefined {
  let p = path;
  for (;;) {
    const hit = positions[p];
    if (hit) return hit;
    if (!p) return undefined;
    const cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
    p = cut <= 0 ? '' : p.slice(0, cut);
  }
}

/**
 * Validate `raw` as a workflow and compile its expressions (so that every guard error surfaces
 * here with its position).
 *
 * @param raw  the parsed YAML value or an object built in code.
 * @param src  file label and (optionally) a path → line/column map from the YAML parser.
 * @throws PollyError `workflow_invalid` with `file:line:column`, the field path and a fix.
 */
export function validateWorkflow(raw: unknown, src: SourceInfo): Workflow {
  const fail = (path: string, message: string): never => {
    throw workflowError(src, path, message);
  };
  const obj = (v: unknown, path: string): Record<string, unknown> => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(path, `expected a mapping, found ${show(v)}`);
    return v as Record<string, unknown>;
  };
  const only = (o: Record<string, unknown>, path: string, keys: string[]): void => {
    for (const k of Object.keys(o)) {
      if (!keys.includes(k)) throw workflowError(src, join(path, k), `unknown field "${k}"; allowed here: ${keys.join(', ')}`, 0, true);
    }
  };
  const str = (v: unknown, path: string): string => {
    if (typeof v !== 'string' || v === '') fail(path, `expected a non-empty string, found ${show(v)}`);
    return v as string;
  };
  const int = (v: unknown, path: string, min = -2147483648): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > 2147483647) fail(path, `expected an integer >= ${min}, found ${show(v)}`);
    return v as number;
  };
  const strList = (v: unknown, path: string): string[] => {
    if (typeof v === 'string') return [v];
    if (!Array.isArray(v)) fail(path, `expected a name or a list of names, found ${show(v)}`);
    return (v as unknown[]).map((x, i) => str(x, `${path}[${i}]`));
  };
  const ident = (v: string, path: string, what: string): string => {
    if (!IDENT_RE.test(v) || RESERVED.has(v)) fail(path, `${what} "${v}" must match ${IDENT_RE.source} and not be one of ${[...RESERVED].join(', ')}`);
    return v;
  };

  const top = obj(raw, '');
  only(top, '', ['name', 'description', 'input', 'key', 'states', 'initial', 'terminal', 'variables', 'actions', 'effects', 'transitions', 'invariants', 'polly']);
  const name = str(top.name, 'name');
  if (!NAME_RE.test(name)) fail('name', `workflow name "${name}" must match ${NAME_RE.source}`);
  const description = top.description === undefined ? '' : str(top.description, 'description');

  // input and key
  const input: InputField[] = [];
  if (top.input !== undefined && top.input !== null) {
    const io = obj(top.input, 'input');
    for (const [k, v] of Object.entries(io)) {
      const p = `input.${k}`;
      const f = obj(v, p);
      only(f, p, ['type', 'pattern']);
      const type = f.type;
      if (type !== 'string' && type !== 'int' && type !== 'bool') fail(`${p}.type`, `expected string, int or bool, found ${show(type)}`);
      let pattern: string | null = null;
      if (f.pattern !== undefined) {
        pattern = str(f.pattern, `${p}.pattern`);
        try {
          new RegExp(pattern);
        } catch (e) {
          fail(`${p}.pattern`, `not a valid regular expression: ${(e as Error).message}`);
        }
      }
      input.push({ name: ident(k, p, 'input field'), type: type as InputField['type'], pattern });
    }
  }
  let key: string | null = null;
  if (top.key !== undefined && top.key !== null) {
    key = str(top.key, 'key');
    for (const m of key.matchAll(/\{([^}]*)\}/g)) {
      if (!input.some((f) => f.name === m[1]))
        fail('key', `the key template names "{${m[1]}}" but input declares no such field (declared: ${input.map((f) => f.name).join(', ') || 'none'})`);
    }
  }

  // control states
  if (!Array.isArray(top.states) || top.states.length === 0) fail('states', 'expected a non-empty list of control states');
  const states = strList(top.states, 'states').map((s, i) => ident(s, `states[${i}]`, 'state'));
  dupes(states, 'states', fail);
  const stateIn = (s: string, path: string): string => {
    if (!states.includes(s)) fail(path, `unknown state "${s}"; declared states: ${states.join(', ')}`);
    return s;
  };
  const initial = stateIn(str(top.initial, 'initial'), 'initial');
  const terminal = strList(top.terminal ?? [], 'terminal').map((s, i) => stateIn(s, `terminal[${i}]`));
  if (terminal.length === 0) fail('terminal', 'declare at least one terminal state: a workflow must be able to end');
  if (terminal.includes(initial)) fail('initial', `the initial state "${initial}" is terminal: the workflow could never do anything`);

  const domain = (o: Record<string, unknown>, path: string, extra: string[]): Domain => {
    only(o, path, ['type', 'values', 'min', 'max', ...extra]);
    switch (o.type) {
      case 'enum': {
        const values = strList(o.values, `${path}.values`);
        if (values.length === 0) fail(`${path}.values`, 'an enum needs at least one value');
        dupes(values, `${path}.values`, fail);
        return { type: 'enum', values };
      }
      case 'bool':
        return { type: 'bool' };
      case 'int': {
        const min = int(o.min, `${path}.min`);
        const max = int(o.max, `${path}.max`);
        if (max < min) fail(`${path}.max`, `max ${max} is below min ${min}`);
        if (max - min > 65535) fail(`${path}.max`, `the range ${min}..${max} is too wide for exhaustive checking (at most 65536 values)`);
        return { type: 'int', min, max };
      }
      default:
        return fail(`${path}.type`, `expected enum, bool or int, found ${show(o.type)}`);
    }
  };
  const valueIn = (d: Domain, v: unknown, path: string): Value => {
    if (d.type === 'enum' && typeof v === 'string' && d.values.includes(v)) return v;
    if (d.type === 'bool' && typeof v === 'boolean') return v;
    if (d.type === 'int' && typeof v === 'number' && Number.isInteger(v) && v >= d.min && v <= d.max) return v;
    return fail(path, `${show(v)} is outside the declared domain (${domainText(d)})`);
  };

  // How real values map onto a data field's domain: every target is checked to lie inside it.
  const dataMap = (d: Domain, v: unknown, path: string): DataMap => {
    if (v === 'saturate') {
      if (d.type !== 'int') fail(path, `saturate maps onto an int domain; this field is ${domainText(d)}`);
      return { kind: 'saturate' };
    }
    const m = obj(v, path);
    if ('buckets' in m) {
      only(m, path, ['buckets']);
      if (d.type !== 'int') fail(path, `buckets map onto an int domain; this field is ${domainText(d)}`);
      if (!Array.isArray(m.buckets) || m.buckets.length === 0) fail(`${path}.buckets`, 'expected a non-empty list of {at_least, value}');
      const buckets = (m.buckets as unknown[]).map((b, i) => {
        const bp = `${path}.buckets[${i}]`;
        const bo = obj(b, bp);
        only(bo, bp, ['at_least', 'value']);
        return { at_least: int(bo.at_least, `${bp}.at_least`), value: valueIn(d, bo.value, `${bp}.value`) as number };
      });
      buckets.forEach((b, i) => {
        if (i > 0 && b.at_least <= buckets[i - 1]!.at_least) fail(`${path}.buckets[${i}].at_least`, `buckets must ascend: ${b.at_least} is not above ${buckets[i - 1]!.at_least}`);
      });
      return { kind: 'buckets', buckets };
    }
    if ('values' in m) {
      only(m, path, ['values', 'otherwise']);
      if (d.type !== 'enum') fail(path, `a values map maps onto an enum domain; this field is ${domainText(d)}`);
      const values: Record<string, string> = {};
      for (const [real, target] of Object.entries(obj(m.values, `${path}.values`))) values[real] = valueIn(d, target, `${path}.values.${real}`) as string;
      const otherwise = m.otherwise === undefined || m.otherwise === null ? null : (valueIn(d, m.otherwise, `${path}.otherwise`) as string);
      return { kind: 'rename', values, otherwise };
    }
    return fail(path, `expected saturate, {buckets: [{at_least, value}, …]} or {values: {REAL: VALUE, …}, otherwise: VALUE}, found ${show(v)}`);
  };

  // variables
  const variables: VariableDecl[] = [];
  for (const [k, v] of Object.entries(top.variables === undefined || top.variables === null ? {} : obj(top.variables, 'variables'))) {
    const p = `variables.${k}`;
    const o = obj(v, p);
    const d = domain(o, p, ['initial']);
    if (o.initial === undefined) fail(p, `variable "${k}" needs an initial value`);
    variables.push({ ...d, name: ident(k, p, 'variable'), initial: valueIn(d, o.initial, `${p}.initial`) } as VariableDecl);
  }

  // actions
  const actions: ActionDecl[] = [];
  for (const [k, v] of Object.entries(obj(top.actions ?? {}, 'actions'))) {
    const p = `actions.${k}`;
    const o = v === null ? {} : obj(v, p);
    only(o, p, ['data', 'description', 'extra']);
    const data: ActionDecl['data'] = [];
    if (o.data !== undefined && o.data !== null) {
      for (const [f, fv] of Object.entries(obj(o.data, `${p}.data`))) {
        const fp = `${p}.data.${f}`;
        const fo = obj(fv, fp);
        const d = domain(fo, fp, ['map']);
        const map = fo.map === undefined ? undefined : dataMap(d, fo.map, `${fp}.map`);
        data.push({ ...d, name: ident(f, fp, 'data field'), ...(map ? { map } : {}) } as ActionDecl['data'][number]);
      }
    }
    if (o.extra !== undefined && o.extra !== 'refuse' && o.extra !== 'payload') fail(`${p}.extra`, `expected refuse or payload, found ${show(o.extra)}`);
    actions.push({ name: ident(k, p, 'action'), data, ...(o.extra === 'payload' ? { extra: 'payload' as const } : {}) });
  }
  if (actions.length === 0) fail('actions', 'declare at least one action');
  const actionNames = new Set(actions.map((a) => a.name));
  const actionIn = (s: string, path: string): string => {
    if (!actionNames.has(s)) fail(path, `unknown action "${s}"; declared actions: ${[...actionNames].join(', ')}`);
    return s;
  };

  // effects
  const effects: EffectDecl[] = [];
  for (const [k, v] of Object.entries(top.effects === undefined || top.effects === null ? {} : obj(top.effects, 'effects'))) {
    const p = `effects.${k}`;
    const o = obj(v, p);
    only(o, p, ['tool', 'on_ok', 'on_failure', 'on_exhausted', 'retry', 'description']);
    if (actionNames.has(k)) fail(p, `"${k}" is both an action and an effect kind; invariants could not tell them apart — rename one`);
    const completion = (f: 'on_ok' | 'on_failure' | 'on_exhausted'): string | null => (o[f] === undefined || o[f] === null ? null : actionIn(str(o[f], `${p}.${f}`), `${p}.${f}`));
    const r = o.retry === undefined ? {} : obj(o.retry, `${p}.retry`);
    only(r, `${p}.retry`, ['max_attempts', 'backoff_seconds', 'lease_seconds']);
    effects.push({
      kind: ident(k, p, 'effect kind'),
      tool: str(o.tool, `${p}.tool`),
      on_ok: completion('on_ok'),
      on_failure: completion('on_failure'),
      on_exhausted: completion('on_exhausted'),
      retry: {
        max_attempts: r.max_attempts === undefined ? 1 : int(r.max_attempts, `${p}.retry.max_attempts`, 1),
        backoff_seconds: r.backoff_seconds === undefined ? 0 : int(r.backoff_seconds, `${p}.retry.backoff_seconds`, 0),
        lease_seconds: r.lease_seconds === undefined ? 300 : int(r.lease_seconds, `${p}.retry.lease_seconds`, 1),
      },
    });
  }

  // transitions
  if (!Array.isArray(top.transitions) || top.transitions.length === 0) fail('transitions', 'expected a non-empty list of transitions');
  const transitions: TransitionDecl[] = (top.transitions as unknown[]).map((tv, i) => {
    const p = `transitions[${i}]`;
    const o = obj(tv, p);
    only(o, p, ['action', 'from', 'to', 'when', 'set', 'emit', 'description']);
    const action = actionIn(str(o.action, `${p}.action`), `${p}.action`);
    let from: string[] | '*';
    if (o.from === '*' || o.from === undefined) from = '*';
    else {
      from = strList(o.from, `${p}.from`).map((s, j) => stateIn(s, Array.isArray(o.from) ? `${p}.from[${j}]` : `${p}.from`));
      const t = from.find((s) => terminal.includes(s));
      if (t) fail(`${p}.from`, `"${t}" is a terminal state: nothing may happen after a run ends`);
    }
    const to = o.to === undefined || o.to === null ? null : stateIn(str(o.to, `${p}.to`), `${p}.to`);
    let when: string | null = null;
    if (o.when !== undefined && o.when !== null) {
      if (typeof o.when === 'boolean') when = String(o.when);
      else when = str(o.when, `${p}.when`);
    }
    const set: Record<string, Value> = {};
    if (o.set !== undefined && o.set !== null) {
      for (const [vk, vv] of Object.entries(obj(o.set, `${p}.set`))) {
        if (!variables.some((x) => x.name === vk)) fail(`${p}.set.${vk}`, `unknown variable "${vk}"; declared variables: ${variables.map((x) => x.name).join(', ') || 'none'}`);
        if (typeof vv !== 'string' && typeof vv !== 'number' && typeof vv !== 'boolean') fail(`${p}.set.${vk}`, `expected an expression or a literal, found ${show(vv)}`);
        set[vk] = vv as Value;
      }
    }
    const emit = o.emit === undefined || o.emit === null ? [] : strList(o.emit, `${p}.emit`);
    for (const [j, e] of emit.entries()) ident(e, `${p}.emit[${j}]`, 'effect kind');
    return { action, from, to, when, set, emit };
  });

  // invariants
  const effectNames = new Set(effects.map((e) => e.kind));
  const eventRef = (v: unknown, path: string): EventRef => {
    let ref: EventRef;
    if (typeof v === 'string' || Array.isArray(v)) ref = { names: strList(v, path), tools: [], when: null };
    else {
      const o = obj(v, path);
      only(o, path, ['name', 'names', 'tool', 'tools', 'when']);
      const names = [...(o.name === undefined ? [] : strList(o.name, `${path}.name`)), ...(o.names === undefined ? [] : strList(o.names, `${path}.names`))];
      const tools = [...(o.tool === undefined ? [] : strList(o.tool, `${path}.tool`)), ...(o.tools === undefined ? [] : strList(o.tools, `${path}.tools`))];
      if (names.length + tools.length === 0) fail(path, 'an event names at least one action or effect kind (name/names) or tool (tool/tools)');
      ref = { names, tools, when: o.when === undefined || o.when === null ? null : str(o.when, `${path}.when`) };
    }
    for (const n of ref.names) {
      if (!actionNames.has(n) && !effectNames.has(n)) fail(path, `"${n}" is neither a declared action nor a declared effect kind`);
    }
    return ref;
  };
  const scope = (v: unknown, path: string): Scope => {
    if (v === undefined || v === null || v === 'global') return { kind: 'global' };
    const o = obj(v, path);
    only(o, path, ['after', 'between', 'until', 'initially_open']);
    if (o.after !== undefined) {
      if (o.between !== undefined || o.until !== undefined) fail(path, 'use either "after" or "between … until", not both');
      return { kind: 'after', after: eventRef(o.after, `${path}.after`) };
    }
    if (o.between === undefined || o.until === undefined) fail(path, 'a scope is {after: EVENT} or {between: EVENT, until: EVENT}');
    if (o.initially_open !== undefined && typeof o.initially_open !== 'boolean') fail(`${path}.initially_open`, 'expected true or false');
    return { kind: 'between', between: eventRef(o.between, `${path}.between`), until: eventRef(o.until, `${path}.until`), initially_open: o.initially_open === true };
  };
  const invariants: InvariantDecl[] = [];
  const invs = top.invariants === undefined || top.invariants === null ? [] : top.invariants;
  if (!Array.isArray(invs)) fail('invariants', 'expected a list of invariants');
  (invs as unknown[]).forEach((iv, i) => {
    const p = `invariants[${i}]`;
    const o = obj(iv, p);
    const patterns = ['never', 'requires_before', 'at_most', 'eventually_after', 'terminates'].filter((k) => o[k] !== undefined);
    only(o, p, ['name', 'description', 'scope', 'never', 'requires_before', 'at_most', 'eventually_after', 'terminates']);
    const iname = str(o.name, `${p}.name`);
    if (patterns.length !== 1)
      fail(p, `an invariant has exactly one pattern (never, requires_before, at_most, eventually_after, terminates); found ${patterns.length ? patterns.join(', ') : 'none'}`);
    const sc = scope(o.scope, `${p}.scope`);
    const pat = patterns[0]!;
    const pp = `${p}.${pat}`;
    if (pat === 'never') invariants.push({ name: iname, pattern: 'never', event: eventRef(o.never, pp), scope: sc });
    else if (pat === 'terminates') {
      if (o.terminates !== true) fail(pp, 'write "terminates: true"');
      if (sc.kind !== 'global') fail(`${p}.scope`, '"terminates" is about whole runs and takes no scope');
      invariants.push({ name: iname, pattern: 'terminates', scope: sc });
    } else {
      const b = obj(o[pat], pp);
      if (pat === 'requires_before') {
        only(b, pp, ['event', 'requires', 'reset_by']);
        const reqRaw = b.requires;
        const reqs = Array.isArray(reqRaw) ? reqRaw.map((r, j) => eventRef(r, `${pp}.requires[${j}]`)) : [eventRef(reqRaw, `${pp}.requires`)];
        if (reqs.length === 0 || reqs.length > 8) fail(`${pp}.requires`, 'list 1 to 8 required events');
        invariants.push({
          name: iname,
          pattern: 'requires_before',
          event: eventRef(b.event, `${pp}.event`),
          requires: reqs,
          reset_by: b.reset_by === undefined ? null : eventRef(b.reset_by, `${pp}.reset_by`),
          scope: sc,
        });
      } else if (pat === 'at_most') {
        only(b, pp, ['event', 'count']);
        const count = int(b.count, `${pp}.count`, 0);
        if (count > 1000) fail(`${pp}.count`, `at most 1000 (found ${count})`);
        invariants.push({ name: iname, pattern: 'at_most', event: eventRef(b.event, `${pp}.event`), count, scope: sc });
      } else {
        only(b, pp, ['event', 'then']);
        invariants.push({ name: iname, pattern: 'eventually_after', event: eventRef(b.event, `${pp}.event`), then: eventRef(b.then, `${pp}.then`), scope: sc });
      }
    }
  });
  dupes(
    invariants.map((x) => x.name),
    'invariants',
    fail,
  );

  // polly bindings
  let polly: PollyBindings | null = null;
  if (top.polly !== undefined && top.polly !== null) {
    const o = obj(top.polly, 'polly');
    only(o, 'polly', ['turn', 'tasks']);
    let turn: PollyBindings['turn'] = null;
    if (o.turn !== undefined && o.turn !== null) {
      const t = obj(o.turn, 'polly.turn');
      only(t, 'polly.turn', ['start', 'end']);
      turn = {
        start: strList(t.start, 'polly.turn.start').map((a) => actionIn(a, 'polly.turn.start')),
        end: strList(t.end, 'polly.turn.end').map((a) => actionIn(a, 'polly.turn.end')),
      };
    }
    // An empty list is allowed: a plan's schedule workflow binds turns but no task vendors.
    if (!Array.isArray(o.tasks)) fail('polly.tasks', 'expected a list of task bindings (empty for a workflow that only schedules tasks)');
    const tasks = (o.tasks as unknown[]).map((tv, i) => {
      const p = `polly.tasks[${i}]`;
      const t = obj(tv, p);
      only(t, p, ['name', 'implementer_vendor', 'reviewer_vendor', 'tests_green', 'review_clean', 'invalidated_by', 'effects']);
      const enumVar = (f: string): string => {
        const vname = str(t[f], `${p}.${f}`);
        const decl = variables.find((x) => x.name === vname);
        if (decl?.type !== 'enum') fail(`${p}.${f}`, `"${vname}" must name an enum variable`);
        return vname;
      };
      const acts = (f: string): string[] => (t[f] === undefined ? [] : strList(t[f], `${p}.${f}`).map((a) => actionIn(a, `${p}.${f}`)));
      const effs = t.effects === undefined ? [] : strList(t.effects, `${p}.effects`);
      for (const e of effs) if (!effectNames.has(e)) fail(`${p}.effects`, `"${e}" is not a declared effect kind`);
      return {
        name: str(t.name, `${p}.name`),
        implementer_vendor: enumVar('implementer_vendor'),
        reviewer_vendor: enumVar('reviewer_vendor'),
        tests_green: acts('tests_green'),
        review_clean: acts('review_clean'),
        invalidated_by: acts('invalidated_by'),
        effects: effs,
      };
    });
    polly = { turn, tasks };
  }

  const wf: Workflow = {
    name,
    description,
    file: src.file,
    input,
    key,
    states,
    initial,
    terminal,
    variables,
    actions,
    effects,
    transitions,
    invariants,
    polly,
    positions: src.positions ?? {},
  };
  try {
    compileModel(wf);
  } catch (e) {
    if (e instanceof ExpressionInFieldError) {
      throw workflowError(src, e.path, `${e.message} — in ${JSON.stringify(e.source)}`, e.offset + (src.quoteOffsets?.[e.path] ?? 0));
    }
    throw e;
  }
  return wf;
}

/** Human text of a domain, e.g. `int 0..3`, `enum a | b`, `bool`. */
export function domainText(d: Domain): string {
  if (d.type === 'enum') return `enum ${d.values.join(' | ')}`;
  if (d.type === 'int') return `int ${d.min}..${d.max}`;
  return 'bool';
}

function dupes(list: string[], path: string, fail: (path: string, m: string) => never): void {
  const seen = new Set<string>();
  list.forEach((x, i) => {
    if (seen.has(x)) fail(`${path}[${i}]`, `"${x}" is declared twice`);
    seen.add(x);
  });
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
