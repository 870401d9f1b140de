/**
 * A Brain upgraded mid-plan: the plan was approved and its schedule run started by a Polly whose
 * schedule workflow had no plan gate state (before commit 634d239), so the run's journal has no
 * APPROVED step. The fixture is what that Polly left in `.polly/` (registry.json, journal.jsonl,
 * config.yaml, the LMDB run store), made by running its code (test/fixtures/pre-gate-upgrade/
 * make-fixture.ts): task a ready, task b dispatched and still working when that Brain stopped.
 *
 * Today's Brain (real registry store, run store, runtime, plan library; in-memory task tools that
 * record each order, as in brain-process.test.ts) takes it over: b finishes, the plan's schedule
 * finishes and its journal is held to today's schedule workflow. The gate was passed before the
 * journal began: that is recorded once (`plan.gate_passed_before_upgrade`), and no run diverges.
 * A run whose plan was NOT approved before its first step is not excused.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openRepoContext } from '../../../brain/registry/repo-context.js';
import { createBrainDeps } from '../../../brain/process/brain-deps.js';
import { runBrainProcess } from '../../../brain/process/brain-process.js';
import { preGateApproval } from '../../../brain/process/schedule-gate-upgrade.js';
import { createTraceChecker } from '../../../brain/process/trace-check.js';
import type { Registry } from '../../../brain/registry/registry-schema.js';
import { openRunStore } from '../../../brain/registry/run-storage.js';
import type { TaskTool } from '../../../brain/task-tools/types.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { expectRunsConform } from '../../helpers/trace-conformance.js';

const FIXTURE = join(process.cwd(), 'test/fixtures/pre-gate-upgrade');

/** A fresh repository whose `.polly/` is the fixture, as the previous Polly left it. */
function upgradedRepo(edit?: (reg: Registry) => void) {
  const repo = createTestRepo();
  const polly = join(repo.dir, '.polly');
  mkdirSync(join(polly, 'runs'), { recursive: true });
  for (const f of ['registry.json', 'journal.jsonl', 'config.yaml', 'runs/runs.mdb']) cpSync(join(FIXTURE, f), join(polly, f));
  if (edit) {
    const reg = JSON.parse(readFileSync(join(polly, 'registry.json'), 'utf8')) as Registry;
    edit(reg);
    writeFileSync(join(polly, 'registry.json'), JSON.stringify(reg, null, 2));
  }
  return repo;
}

/** Every run of the repository held to today's workflows, as `polly check --run` does. */
async function verdicts(dir: string) {
  const ctx = await openRepoContext(dir, gitTestEnv());
  const runs = await openRunStore(ctx.repo.pollyDir, ctx.store);
  try {
    const checker = createTraceChecker(await ctx.store.read(), await runs.store.listRuns(), await runs.store.journal(), ctx.config);
    return checker.runIds().map((id) => checker.check(id));
  } finally {
    await runs.store.close();
  }
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a plan approved before the plan gate was a step of its schedule', () => {
  it('the upgraded Brain finishes it: the gate passed before the journal began is recorded once, and every run conforms', async () => {
    const repo = upgradedRepo();
    // Before today's Brain: the old schedule run's journal held to today's workflow is excused by
    // the approval recorded before its first step, and only by that.
    const before = await verdicts(repo.dir);
    expect(before.map((v) => v.line).filter((l) => !l.startsWith('conforms:'))).toEqual([]);
    expect(before.find((v) => v.workflow === 'plan-p1')!.line).toMatch(/plan gate passed before this run's journal began \(approved by human:tester \(terminal\) at /);

    const ctx = await openRepoContext(repo.dir, gitTestEnv());
    const deps = await createBrainDeps(ctx, { ...gitTestEnv(), ANTHROPIC_API_KEY: 'sk-ant-dummy', OPENAI_API_KEY: '' }, () => {});
    const calls: string[] = [];
    const ok =
      (note: string): TaskTool =>
      async (tctx) => {
        calls.push(`${tctx.task.id}:${tctx.order.tool}`);
        return { outcome: 'ok', note, ...(tctx.order.tool === 'open_draft_pr' ? { data: { reviewer: 'codex' } } : {}) };
      };
    const tools: Record<string, TaskTool> = {
      dispatch: ok('worker finished'),
      run_acceptance: ok('green'),
      push: ok('pushed'),
      open_draft_pr: ok('opened'),
      send_followup: ok('fixed'),
      dispatch_review: ok('clean'),
      mark_ready: ok('ready'),
    };
    const lines: string[] = [];
    const controller = new AbortController();
    const done = runBrainProcess({ ...deps, tools, startGoalBrain: null, mergeWatchSeconds: 3600, signal: controller.signal, log: (l) => lines.push(l) });
    stops.push(async () => {
      controller.abort();
      await done.catch(() => {});
    });

    const reg = await until('the goal done', async () => {
      const r = await ctx.store.read();
      return r.goals.g1?.status === 'done' ? r : null;
    });
    expect(reg.tasks['p1-a']!.status).toBe('ready');
    expect(reg.tasks['p1-b']!.status).toBe('ready');
    // b's dispatch order, left open by the old Brain, was performed once; a was not run again.
    expect(calls.filter((c) => c.startsWith('p1-a:'))).toEqual([]);
    expect(calls.filter((c) => c === 'p1-b:dispatch')).toHaveLength(1);
    const schedule = (await deps.runtime.list({ allAreas: true })).find((r) => r.workflow === 'plan-p1')!;
    expect(schedule).toMatchObject({ status: 'finished', outcome: 'finished' });
    // The old journal never gets an APPROVED step (it cannot be inserted before step 1).
    expect((await deps.runtime.journal(schedule.id)).filter((e) => e.kind === 'run.action' && e.data.action === 'APPROVED')).toEqual([]);
    const journal = await ctx.store.journal();
    expect(journal.filter((e) => e.kind === 'run.trace_divergence')).toEqual([]);
    expect(lines.filter((l) => l.includes('TRACE DIVERGENCE') || l.includes('refused'))).toEqual([]);
    const passed = journal.filter((e) => e.kind === 'plan.gate_passed_before_upgrade');
    expect(passed.map((e) => e.data)).toEqual([
      expect.objectContaining({ planId: 'p1', run: schedule.id, by: 'human:tester (terminal)', decidedAt: reg.plans.p1!.decidedAt, firstStepSeq: expect.any(Number) }),
    ]);
    expect(reg.plans.p1!.gatePassedBeforeUpgrade).toMatchObject({ run: schedule.id });

    // A restarted Brain records nothing more.
    controller.abort();
    await done;
    stops.length = 0;
    const again = await createBrainDeps(await openRepoContext(repo.dir, gitTestEnv()), { ...gitTestEnv(), ANTHROPIC_API_KEY: 'sk-ant-dummy', OPENAI_API_KEY: '' }, () => {});
    const c2 = new AbortController();
    const second = runBrainProcess({ ...again, tools, startGoalBrain: null, mergeWatchSeconds: 3600, signal: c2.signal, log: () => {} });
    stops.push(async () => {
      c2.abort();
      await second.catch(() => {});
    });
    await until('the second Brain running', async () => (await ctx.store.read()).brain?.pid === process.pid);
    await new Promise((r) => setTimeout(r, 1500));
    c2.abort();
    await second;
    stops.length = 0;
    expect((await ctx.store.journal()).filter((e) => e.kind === 'plan.gate_passed_before_upgrade')).toHaveLength(1);
    await expectRunsConform(repo.dir);
  }, 300_000);

  it('is no excuse for a run whose plan was approved after its first step, nor for a plan that is not approved', async () => {
    const journalOf = async (dir: string) => {
      const ctx = await openRepoContext(dir, gitTestEnv());
      const runs = await openRunStore(ctx.repo.pollyDir, ctx.store);
      try {
        const run = (await runs.store.listRuns()).find((r) => r.workflow === 'plan-p1')!;
        return { reg: await ctx.store.read(), run, journal: await runs.store.journal(0, { run: run.id }) };
      } finally {
        await runs.store.close();
      }
    };
    const late = upgradedRepo((reg) => {
      reg.plans.p1!.decidedAt = new Date(Date.parse(reg.plans.p1!.decidedAt!) + 3600_000).toISOString();
    });
    const l = await journalOf(late.dir);
    expect(preGateApproval(l.reg.plans.p1, l.run, l.journal)).toBeNull();
    const lateVerdict = (await verdicts(late.dir)).find((v) => v.workflow === 'plan-p1')!;
    expect(lateVerdict.conforms).toBe(false);
    expect(lateVerdict.line).toMatch(/TURN_START is recorded from state "idle", but the run was in "gate"/);

    const pending = upgradedRepo((reg) => {
      reg.plans.p1!.gate = 'pending';
    });
    const p = await journalOf(pending.dir);
    expect(preGateApproval(p.reg.plans.p1, p.run, p.journal)).toBeNull();

    const ok = await journalOf(upgradedRepo().dir);
    expect(preGateApproval(ok.reg.plans.p1, ok.run, ok.journal)).toEqual({
      action: 'APPROVED',
      data: { by: 'human:tester (terminal)', at: ok.reg.plans.p1!.decidedAt },
      firstStepSeq: expect.any(Number),
    });
  }, 120_000);
});
