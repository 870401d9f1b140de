import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../brain/core/errors.js';
import { applyAction, enabledActions, initialState, isTerminal, runKey, type RunState } from '../../workflows/run/interpreter.js';
import { loadWorkflow, parseWorkflow } from '../../workflows/load-workflow.js';
import { validateWorkflow } from '../../workflows/workflow-format.js';

const MINIMAL = `name: tiny
states: [a, b]
initial: a
terminal: [b]
variables:
  n: {type: int, min: 0, max: 3, initial: 0}
actions:
  GO: {}
transitions:
  - {action: GO, from: a, to: b, when: "n == 0"}
`;

/** Parse `text` and return the workflow_invalid message (fails the test if it parses). */
function invalid(text: string): string {
  try {
    parseWorkflow(text, 'wf.yaml');
  } catch (e) {
    expect(isPollyError(e, 'workflow_invalid')).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected workflow_invalid');
}

describe('workflow format: errors point at file:line:column and the field path', () => {
  it('reports an unknown name in a guard at the column of the name', () => {
    const text = MINIMAL.replace('when: "n == 0"', 'when: "n == 0 && m > 1"');
    const line = text.split('\n')[9]!;
    const column = line.indexOf('m >') + 1;
    expect(invalid(text)).toMatch(new RegExp(`^wf\\.yaml:10:${column}: transitions\\[0\\]\\.when: unknown name "m"`));
  });

  it('reports a syntax error inside an expression with its offset', () => {
    const msg = invalid(MINIMAL.replace('when: "n == 0"', 'when: "n == (0"'));
    expect(msg).toMatch(/^wf\.yaml:10:\d+: transitions\[0\]\.when: expected "\)"/);
  });

  it('reports a type error (int compared with a string)', () => {
    expect(invalid(MINIMAL.replace('when: "n == 0"', 'when: "n == \'x\'"'))).toMatch(/transitions\[0\]\.when: .*string/);
  });

  it('reports an unknown state, action, field and a duplicate key with their lines', () => {
    expect(invalid(MINIMAL.replace('to: b', 'to: c'))).toMatch(/^wf\.yaml:10:\d+: transitions\[0\]\.to: unknown state "c"/);
    expect(invalid(MINIMAL.replace('action: GO', 'action: STOP'))).toMatch(/^wf\.yaml:10:\d+: transitions\[0\]\.action: unknown action "STOP"/);
    expect(invalid(MINIMAL.replace('initial: a\n', 'initial: a\ncolour: red\n'))).toMatch(/^wf\.yaml:4:1: colour: unknown field "colour"/);
    expect(invalid(MINIMAL.replace('initial: a\n', 'initial: a\ninitial: b\n'))).toMatch(/^wf\.yaml:4:1: not valid YAML/);
  });

  it('refuses values outside the declared domain and transitions out of terminal states', () => {
    expect(invalid(MINIMAL.replace('initial: 0}', 'initial: 7}'))).toMatch(/^wf\.yaml:6:\d+: variables\.n\.initial: 7 is outside the declared domain \(int 0\.\.3\)/);
    expect(invalid(MINIMAL.replace('from: a, to: b', 'from: b, to: a'))).toMatch(/transitions\[0\]\.from: "b" is a terminal state/);
  });

  it('validates objects built in code (no positions: the file label and the path)', () => {
    expect(() => validateWorkflow({ name: 'Bad Name' }, { file: 'plan:1' })).toThrow(/^plan:1: name: workflow name "Bad Name"/);
  });

  it('loads a directory or the file, and says what to do when nothing is there', () => {
    expect(loadWorkflow('workflows/customer-brief').name).toBe('customer-brief');
    expect(loadWorkflow('workflows/polly-task/workflow.yaml').name).toBe('polly-task');
    try {
      loadWorkflow('workflows/no-such');
      throw new Error('expected bad_input');
    } catch (e) {
      expect(isPollyError(e, 'bad_input')).toBe(true);
      expect((e as Error).message).toMatch(/no workflow at .*workflow\.yaml/);
    }
  });
});

describe('interpreter: the runtime steps through the same semantics the checker explored', () => {
  const brief = loadWorkflow('workflows/customer-brief');
  const step = (s: RunState, action: string, data: Record<string, unknown> = {}) => {
    const r = applyAction(brief, s, action, data);
    if ('rejected' in r) throw new Error(r.rejected);
    return r;
  };

  it('derives the run key from validated input and refuses a bad field with an instruction', () => {
    expect(runKey(brief, { channel: '#cs', day: '2026-11-29' })).toBe('brief:#cs:2026-11-29');
    expect(() => runKey(brief, { channel: 'cs', day: '2026-11-29' })).toThrow(/input field "channel" = "cs" is not a valid string matching/);
  });

  it('happy path: one effect per step, ending posted', () => {
    let s = initialState(brief, { channel: '#cs', day: '2026-11-29' });
    expect(s).toEqual({ state: 'idle', vars: { tickets: 0 } });
    let r = step(s, 'START');
    expect(r.emitted.map((e) => `${e.kind}:${e.tool}`)).toEqual(['fetch_tickets:zendesk_search']);
    r = step(r.state, 'TICKETS_FETCHED', { count: 2 });
    expect(r.emitted.map((e) => e.kind)).toEqual(['ask_approval']);
    expect(r.emitted[0]!.on_failure).toBe('DENIED');
    r = step(r.state, 'APPROVED');
    expect(r.emitted.map((e) => e.kind)).toEqual(['post_brief']);
    s = step(r.state, 'POSTED').state;
    expect(s.state).toBe('posted');
    expect(isTerminal(brief, s)).toBe(true);
    expect(applyAction(brief, s, 'START')).toMatchObject({ code: 'terminal' });
  });

  it('a denial is a result, and zero tickets ends without posting', () => {
    const review = step(step(initialState(brief, { channel: '#cs', day: '2026-11-29' }), 'START').state, 'TICKETS_FETCHED', { count: 1 }).state;
    const denied = step(review, 'DENIED');
    expect(denied.state.state).toBe('denied');
    expect(denied.emitted).toEqual([]);
    const empty = step(step(initialState(brief, { channel: '#cs', day: '2026-11-29' }), 'START').state, 'TICKETS_FETCHED', { count: 0 });
    expect(empty.state.state).toBe('empty');
    expect(empty.emitted).toEqual([]);
  });

  it('rejects what does not apply, observably', () => {
    const s = initialState(brief, { channel: '#cs', day: '2026-11-29' });
    expect(applyAction(brief, s, 'APPROVED')).toMatchObject({ code: 'not_enabled' });
    expect(applyAction(brief, s, 'LAUNCH')).toMatchObject({ code: 'unknown_action' });
    const gathering = step(s, 'START').state;
    expect(applyAction(brief, gathering, 'TICKETS_FETCHED', { count: 9 })).toMatchObject({ code: 'bad_data' });
    expect(enabledActions(brief, gathering).map((a) => `${a.action}${JSON.stringify(a.data)}`)).toEqual([
      'TICKETS_FETCHED{"count":0}',
      'TICKETS_FETCHED{"count":1}',
      'TICKETS_FETCHED{"count":2}',
      'FETCH_FAILED{}',
    ]);
  });

  it("polly-task: a reviewer of the implementer's vendor is not accepted; cancel works from anywhere", () => {
    const task = loadWorkflow('workflows/polly-task');
    let s = initialState(task, { task: 'add-x' });
    const go = (a: string, d: Record<string, unknown> = {}) => {
      const r = applyAction(task, s, a, d);
      if ('rejected' in r) throw new Error(r.rejected);
      s = r.state;
      return r;
    };
    go('START', { vendor: 'codex' });
    go('WORKER_DONE');
    go('TESTS_GREEN');
    go('PUSHED');
    expect(applyAction(task, s, 'PR_OPENED', { reviewer: 'codex' })).toMatchObject({ code: 'not_enabled' });
    expect(go('PR_OPENED', { reviewer: 'pi' }).emitted.map((e) => e.tool)).toEqual(['dispatch_review']);
    expect(go('CANCEL').state.state).toBe('cancelled');
  });
});
