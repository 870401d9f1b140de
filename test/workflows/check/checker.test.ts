import { execFileSync, spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../../brain/cli.js';
import { checkWorkflow, formatCheckResult, type CheckResult } from '../../../workflows/check/checker.js';
import { parseWorkflow } from '../../../workflows/load-workflow.js';
import { TWINS, loadForCheck } from '../../helpers/workflows-twins.js';
import { withPollyGuarantees } from '../../../workflows/check/guarantees.js';
import { syntheticPlan } from '../../../scripts/synthetic-plan.js';
import { applyAction, enabledActions, initialState } from '../../../workflows/run/interpreter.js';

/** Shared skeleton for small inline workflows. */
function wf(body: string) {
  return parseWorkflow(`name: t\n${body}`, 'inline.yaml');
}

const names = (r: CheckResult) => r.violations.map((v) => v.invariant);

describe('checker: built-ins admitted, every twin refused for exactly its broken guarantee', () => {
  it("admits customer-brief with the seed's line", () => {
    const r = checkWorkflow(loadForCheck('workflows/customer-brief'));
    expect(r.admitted).toBe(true);
    expect(r.exhaustive).toBe(true);
    expect(r.line).toBe(`admitted: customer-brief — paths explored: ${r.pathsExplored} · states seen: ${r.statesSeen} · exhaustive within declared domains`);
    expect(r.statesSeen).toBeGreaterThan(8);
  });

  it("admits polly-task with Polly's guarantees added", () => {
    const task = loadForCheck('workflows/polly-task');
    expect(task.invariants.map((i) => i.name)).toEqual(
      expect.arrayContaining([
        'never-merge',
        'never-force-push',
        'ready-only-after-tests-green-and-clean-review',
        'draft-pr-only-after-tests-green',
        'reviewer-vendor-differs',
        'at-most-5-dispatches-per-turn',
        'every-path-terminates',
      ]),
    );
    const r = checkWorkflow(task);
    expect(formatCheckResult(r)).toMatch(/^admitted: polly-task — /);
  });

  for (const { twin, invariant } of TWINS) {
    it(`refuses ${twin}, naming ${invariant} with a shortest trace`, () => {
      const r = checkWorkflow(loadForCheck(`test/fixtures/${twin}`));
      expect(r.admitted).toBe(false);
      expect(r.line).toBe(`REFUSED: ${twin}`);
      expect(names(r)).toEqual([invariant]);
      expect(r.violations[0]!.trace.length).toBeGreaterThan(0);
    });
  }

  it('unsafe-brief: the trace shows the post emitted with the approval request, before any answer', () => {
    const r = checkWorkflow(loadForCheck('test/fixtures/unsafe-brief'));
    expect(formatCheckResult(r)).toBe(
      [
        'REFUSED: unsafe-brief',
        '  no-post-without-prior-approval',
        '    1. START → state: idle → gathering; emitted fetch_tickets',
        '    2. TICKETS_FETCHED {count: 1} → state: gathering → review, tickets: 0 → 1; emitted ask_approval, post_brief',
        '',
      ].join('\n'),
    );
  });

  it('force-push deep in the cycle: the shortest trace goes through both fix rounds', () => {
    const r = checkWorkflow(loadForCheck('test/fixtures/force-push-in-retry-cycle'));
    const trace = r.violations[0]!.trace;
    expect(trace.filter((s) => s.action === 'REVIEW_BLOCKING')).toHaveLength(2);
    expect(trace.at(-1)).toMatchObject({ action: 'TESTS_GREEN', emitted: ['force_push_branch'] });
    // Shortest: START, WORKER_DONE, TESTS_GREEN, PUSHED, PR_OPENED, BLOCKING, DONE, GREEN, PUSHED, BLOCKING, DONE, GREEN.
    expect(trace).toHaveLength(12);
  });

  it('retry loop: the refusal shows the cycle', () => {
    const r = checkWorkflow(loadForCheck('test/fixtures/retry-loop-no-exit'));
    const v = r.violations[0]!;
    expect(v.cycleStart).toBe(1);
    expect(v.trace.slice(1).map((s) => s.action)).toEqual(['WORKER_DONE', 'TESTS_RED']);
  });

  it('revise loop without a fix-round bound: the counterexample is the fix round after ready, back to watching', () => {
    const r = checkWorkflow(loadForCheck('test/fixtures/revise-loop-no-bound'));
    expect(r.admitted).toBe(false);
    const v = r.violations[0]!;
    expect(v.invariant).toBe('every-path-terminates');
    expect(v.trace[v.cycleStart! - 1]).toMatchObject({ action: 'MARKED_READY', changes: [{ variable: 'state', from: 'marking_ready', to: 'watching' }] });
    expect(v.trace.slice(v.cycleStart).map((s) => s.action)).toEqual(['FEEDBACK', 'WORKER_DONE', 'TESTS_GREEN', 'REVIEW_CLEAN', 'PUSHED', 'REPLIED', 'MARKED_READY']);
    // The same workflow with the bound (the built-in polly-task) is admitted.
    expect(checkWorkflow(loadForCheck('workflows/polly-task')).admitted).toBe(true);
  });
});

describe('checker: built-in refusals', () => {
  const base = `states: [a, b, c, end]
initial: a
terminal: [end]
actions: {GO: {}, STOP: {}, POKE: {}}
effects:
  e: {tool: x, on_ok: GO, on_failure: STOP}
`;

  it('refuses a deadlock (a non-terminal state with nothing enabled)', () => {
    const r = checkWorkflow(wf(`${base}transitions:\n  - {action: GO, from: a, to: b}\n  - {action: STOP, from: a, to: end}\n`));
    expect(names(r)).toContain('deadlock-free');
    expect(r.violations.find((v) => v.invariant === 'deadlock-free')!.trace.map((s) => s.action)).toEqual(['GO']);
  });

  it('refuses states that cannot reach a terminal state (a trap with no exit)', () => {
    const r = checkWorkflow(
      wf(`${base}transitions:\n  - {action: GO, from: a, to: b}\n  - {action: GO, from: b, to: c}\n  - {action: GO, from: c, to: b}\n  - {action: STOP, from: a, to: end}\n`),
    );
    expect(names(r)).toEqual(['terminal-always-reachable']);
  });

  it('admits a cycle with an exit when "terminates" is not required, refuses it when it is', () => {
    const body = `${base}transitions:\n  - {action: GO, from: a, to: b}\n  - {action: GO, from: b, to: a}\n  - {action: STOP, from: [a, b], to: end}\n`;
    expect(checkWorkflow(wf(body)).admitted).toBe(true);
    expect(names(checkWorkflow(wf(`${body}invariants:\n  - {name: finite, terminates: true}\n`)))).toEqual(['finite']);
  });

  it('refuses an emission on a step that changes nothing', () => {
    const r = checkWorkflow(wf(`${base}transitions:\n  - {action: POKE, from: a, emit: [e]}\n  - {action: STOP, from: a, to: end}\n`));
    expect(names(r)).toEqual(['no-emission-on-identity-transition']);
  });

  it('refuses an undeclared effect and an effect without completions', () => {
    const undeclared = checkWorkflow(wf(`${base}transitions:\n  - {action: GO, from: a, to: end, emit: [ghost]}\n`));
    expect(names(undeclared)).toEqual(['effects-declared']);
    expect(undeclared.violations[0]!.trace.map((s) => s.emitted)).toEqual([['ghost']]);
    const incomplete = checkWorkflow(wf(`${base.replace('on_failure: STOP', '')}transitions:\n  - {action: GO, from: a, to: end, emit: [e]}\n`));
    expect(names(incomplete)).toEqual(['effects-have-completions']);
  });

  it("refuses an assignment outside a variable's domain", () => {
    const r = checkWorkflow(
      wf(`${base}variables: {n: {type: int, min: 0, max: 2, initial: 0}}\ntransitions:\n  - {action: GO, from: a, set: {n: n + 1}}\n  - {action: STOP, from: a, to: end}\n`),
    );
    expect(names(r)).toEqual(['within-declared-domains']);
    expect(r.violations[0]!.trace.map((s) => s.action)).toEqual(['GO', 'GO', 'GO']);
  });

  it('a state cap refuses as "not exhaustive", never a silent admit', () => {
    const r = checkWorkflow(loadForCheck('workflows/polly-task'), { stateCap: 50 });
    expect(r.admitted).toBe(false);
    expect(r.exhaustive).toBe(false);
    expect(formatCheckResult(r)).toBe('REFUSED: polly-task\n  not exhaustive: state cap 50 reached\n');
  });
});

describe('checker: patterns and scopes', () => {
  const base = `states: [s, end]
initial: s
terminal: [end]
variables: {n: {type: int, min: 0, max: 3, initial: 0}}
actions: {OPEN: {}, CLOSE: {}, PING: {}, ACK: {}, QUIT: {}}
effects:
  ping: {tool: x, on_ok: ACK, on_failure: ACK}
transitions:
  - {action: OPEN, from: s, when: "n < 3", set: {n: n + 1}}
  - {action: PING, from: s, when: "n < 3", set: {n: n + 1}, emit: [ping]}
  - {action: CLOSE, from: s, when: "n < 3", set: {n: n + 1}}
  - {action: ACK, from: s, when: "n < 3", set: {n: n + 1}}
  - {action: QUIT, from: s, to: end}
`;
  it('at_most counts per between…until window', () => {
    const twoPerWindow = checkWorkflow(wf(`${base}invariants:\n  - {name: two-pings, at_most: {event: ping, count: 2}, scope: {between: OPEN, until: CLOSE}}\n`));
    expect(names(twoPerWindow)).toEqual([]);
    const one = checkWorkflow(wf(`${base}invariants:\n  - {name: one-ping, at_most: {event: ping, count: 1}, scope: {between: OPEN, until: CLOSE}}\n`));
    expect(names(one)).toEqual(['one-ping']);
    expect(one.violations[0]!.trace.map((s) => s.action)).toEqual(['OPEN', 'PING', 'PING']);
  });

  it('never … after X applies only from the first X on', () => {
    const r = checkWorkflow(wf(`${base}invariants:\n  - {name: no-ping-after-close, never: ping, scope: {after: CLOSE}}\n`));
    expect(r.violations[0]!.trace.map((s) => s.action)).toEqual(['CLOSE', 'PING']);
  });

  it('eventually_after: an obligation still open when the run ends is a violation', () => {
    const r = checkWorkflow(wf(`${base}invariants:\n  - {name: ping-acked, eventually_after: {event: ping, then: ACK}}\n`));
    expect(names(r)).toEqual(['ping-acked']);
    expect(r.violations[0]!.trace.map((s) => s.action)).toEqual(['PING', 'QUIT']);
  });

  it('an event with a "when" condition reads the state after the step', () => {
    const r = checkWorkflow(wf(`${base}invariants:\n  - {name: no-late-ping, never: {name: ping, when: "n >= 2"}}\n`));
    expect(r.violations[0]!.trace.map((s) => s.action)).toEqual(['OPEN', 'PING']);
  });
});

describe('Polly guarantees on a plan-shaped workflow (per-task bindings, turns)', () => {
  /** Three tasks, each dispatched once; `split` ends the turn after the second dispatch. */
  const plan = (split: boolean, max: number) => {
    const tasks = [1, 2, 3];
    const lines = [
      'name: plan',
      'states: [turn1, turn2, done]',
      'initial: turn1',
      'terminal: [done]',
      'variables:',
      ...tasks.flatMap((i) => [
        `  t${i}: {type: enum, values: [todo, running, green, ready], initial: todo}`,
        `  t${i}_impl: {type: enum, values: [none, claude-code, codex], initial: none}`,
        `  t${i}_rev: {type: enum, values: [none, claude-code, codex], initial: none}`,
      ]),
      'actions:',
      '  END_TURN: {}',
      '  FINISH: {}',
      ...tasks.flatMap((i) => [`  T${i}_GO: {}`, `  T${i}_GREEN: {}`, `  T${i}_CLEAN: {}`]),
      'effects:',
      ...tasks.flatMap((i) => [
        `  t${i}_dispatch: {tool: dispatch, on_ok: T${i}_GREEN, on_failure: FINISH}`,
        `  t${i}_review: {tool: dispatch_review, on_ok: T${i}_CLEAN, on_failure: FINISH}`,
        `  t${i}_ready: {tool: mark_ready, on_ok: FINISH, on_failure: FINISH}`,
      ]),
      'transitions:',
      `  - {action: END_TURN, from: turn1, to: turn2${split ? ", when: \"t1 != 'todo' && t2 != 'todo'\"" : ''}}`,
      ...tasks.flatMap((i) => [
        `  - {action: T${i}_GO, from: ${split && i === 3 ? 'turn2' : '[turn1, turn2]'}, when: "t${i} == 'todo'", set: {t${i}: running, t${i}_impl: claude-code}, emit: [t${i}_dispatch]}`,
        `  - {action: T${i}_GREEN, from: [turn1, turn2], when: "t${i} == 'running'", set: {t${i}: green, t${i}_rev: codex}, emit: [t${i}_review]}`,
        `  - {action: T${i}_CLEAN, from: [turn1, turn2], when: "t${i} == 'green'", set: {t${i}: ready}, emit: [t${i}_ready]}`,
      ]),
      `  - {action: FINISH, from: turn2, to: done, when: "${tasks.map((i) => `t${i} == 'ready'`).join(' && ')}"}`,
      'polly:',
      '  turn: {start: [END_TURN], end: [END_TURN]}',
      '  tasks:',
      ...tasks.flatMap((i) => [
        `    - {name: t${i}, implementer_vendor: t${i}_impl, reviewer_vendor: t${i}_rev, tests_green: [T${i}_GREEN], review_clean: [T${i}_CLEAN], effects: [t${i}_dispatch, t${i}_review, t${i}_ready]}`,
      ]),
    ];
    return withPollyGuarantees(parseWorkflow(`${lines.join('\n')}\n`, 'plan.yaml'), { maxDispatchesPerTurn: max });
  };

  it('names per-task guarantees and counts dispatches per turn (the first turn is open from the start)', () => {
    const wf = plan(true, 5);
    expect(wf.invariants.map((i) => i.name)).toEqual(
      expect.arrayContaining(['t1/ready-only-after-tests-green-and-clean-review', 't3/reviewer-vendor-differs', 'at-most-5-dispatches-per-turn']),
    );
    // Turn 1 holds at most 2 implementers + 2 reviewers; turn 2 at most t3's implementer + 3 reviewers: 4 each.
    expect(checkWorkflow(wf).admitted).toBe(true);
    const tight = checkWorkflow(plan(true, 3));
    expect(names(tight)).toEqual(['at-most-3-dispatches-per-turn']);
    // Without the turn split all six dispatches may land in the first turn.
    const one = checkWorkflow(plan(false, 5));
    expect(names(one)).toEqual(['at-most-5-dispatches-per-turn']);
    expect(one.violations[0]!.trace.filter((s) => s.emitted.some((e) => /dispatch|review/.test(e)))).toHaveLength(6);
  });
});

describe('checker: scale', () => {
  it('a plan with parallel tasks is explored exhaustively, cycles or not', () => {
    const plan = syntheticPlan(3, 1);
    const r = checkWorkflow(plan);
    expect(r.admitted).toBe(true);
    // Independent count of workflow states through the runtime API (named states, no monitors):
    // per task todo, impl x2, test x2, review x2, done, failed = 9 local states while running,
    // plus "finished" with each task done or failed (2^3).
    const seen = new Set<string>();
    let frontier = [initialState(plan)];
    seen.add(JSON.stringify(frontier[0]));
    while (frontier.length) {
      const nextFrontier = [];
      for (const s of frontier) {
        for (const { action, data } of enabledActions(plan, s)) {
          const step = applyAction(plan, s, action, data);
          if ('rejected' in step) throw new Error(step.rejected);
          const k = JSON.stringify(step.state);
          if (!seen.has(k)) {
            seen.add(k);
            nextFrontier.push(step.state);
          }
        }
      }
      frontier = nextFrontier;
    }
    expect(seen.size).toBe(9 ** 3 + 2 ** 3);
    // The product with the monitors (a global dispatch counter among them) is larger, never smaller.
    expect(r.statesSeen).toBeGreaterThan(seen.size);
  });
});

describe('polly check (CLI)', () => {
  const run = async (args: string[]) => {
    let out = '';
    let err = '';
    const sink = (f: (s: string) => void) =>
      new Writable({
        write(chunk, _e, cb) {
          f(String(chunk));
          cb();
        },
      });
    const code = await main(['check', ...args], {
      stdin: process.stdin,
      stdout: sink((s) => {
        out += s;
      }),
      stderr: sink((s) => {
        err += s;
      }),
      cwd: process.cwd(),
      env: process.env,
    });
    return { code, out, err };
  };

  it('exit 0 with the admitted line, 1 with REFUSED and the invariant, 2 for a malformed file', async () => {
    const ok = await run(['workflows/customer-brief']);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/^admitted: customer-brief — paths explored: \d+ · states seen: \d+ · exhaustive within declared domains\n$/);
    const refused = await run(['test/fixtures/unsafe-brief']);
    expect(refused.code).toBe(1);
    expect(refused.out.split('\n').slice(0, 2)).toEqual(['REFUSED: unsafe-brief', '  no-post-without-prior-approval']);
    const json = await run(['test/fixtures/unsafe-brief', '--json']);
    expect(JSON.parse(json.out)).toMatchObject({ admitted: false, name: 'unsafe-brief', violations: [{ invariant: 'no-post-without-prior-approval', kind: 'requires_before' }] });
    const promela = await run(['workflows/customer-brief', '--promela']);
    expect(promela.out).toMatch(/active proctype workflow\(\)/);
  });

  it('the built CLI, as a process, exits 2 with file:line for a malformed workflow', () => {
    const dir = execFileSync('mktemp', ['-d']).toString().trim();
    execFileSync('sh', ['-c', `printf 'name: broken\\nstates: [a, b\\n' > ${dir}/workflow.yaml`]);
    const r = spawnSync(process.execPath, ['dist/brain/cli.js', 'check', dir], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${dir}/workflow\\.yaml:\\d+:\\d+: not valid YAML`));
    expect(r.stdout).toBe('');
  });
});
