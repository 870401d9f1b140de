/**
 * Restart and resume through the real CLI (issue 15, item 2): `polly run` on a plan file it ran
 * before re-attaches instead of proposing it again; a dead Brain's row is reconciled before
 * `polly status` shows anything; `polly resume` with nothing unfinished says so.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { planContentKey } from '../../../brain/process/resume.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

const PLAN = `goal: one change
tasks:
  - key: t1
    title: Change a
    purpose: implement
    worker: pi
    reviewer: codex
    prompt: change a
    acceptance:
      commands: [node --test]
      criteria: ["a is changed"]
`;

const KEY = { OPENAI_API_KEY: 'sk-placeholder' };

const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

describe('restart and resume', () => {
  it('the plan key depends on the content, not on the order of the tasks', () => {
    const a = { key: 'a', title: 'A', purpose: 'implement', worker: 'pi', prompt: 'x', dependsOn: [], acceptance: { commands: ['npm test'] } };
    const b = { ...a, key: 'b', dependsOn: ['a'] };
    expect(planContentKey([a, b])).toBe(planContentKey([b, a]));
    expect(planContentKey([a, b])).not.toBe(planContentKey([a, { ...b, prompt: 'y' }]));
  });

  it('polly run of the same plan file re-attaches (one plan, one goal); a SIGKILLed Brain is shown as gone; resume names what it resumes', { timeout: 120_000 }, async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const file = join(repo.root, 'plan.yaml');
    writeFileSync(file, PLAN);
    // codex reviews: polly run preflights its key (a placeholder; no model is called before the crash).
    const first = runCli(['run', file, '--detach', '--json'], repo.dir, KEY);
    expect(first.code, first.stderr).toBe(0);
    const firstOut = JSON.parse(first.stdout) as { plan: string; goal: string };
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    // The Brain started by run: wait for its row, then crash it.
    let brainPid: number | null = null;
    for (let i = 0; i < 200 && brainPid === null; i++) {
      brainPid = (await store.read()).brain?.pid ?? null;
      if (brainPid === null) await new Promise((r) => setTimeout(r, 100));
    }
    expect(brainPid).not.toBeNull();
    pids.push(brainPid!);
    process.kill(brainPid!, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 300));

    const status = JSON.parse(runCli(['status', '--json'], repo.dir).stdout) as { brain: unknown; brainGone: { pid: number } | null };
    expect(status.brain).toBeNull();
    expect(status.brainGone?.pid).toBe(brainPid);
    expect(runCli(['status'], repo.dir).stdout).toContain(`pid ${brainPid} is gone`);

    const second = runCli(['run', file, '--detach', '--json'], repo.dir, KEY);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain(`is plan ${firstOut.plan} (pending), already proposed for goal ${firstOut.goal}; resuming it`);
    const reg = await store.read();
    expect(Object.keys(reg.plans)).toEqual([firstOut.plan]);
    expect(Object.keys(reg.goals)).toEqual([firstOut.goal]);
    expect(reg.brain?.pid).not.toBe(brainPid);
    const journal = await store.journal();
    expect(journal.some((e) => e.kind === 'brain.reaped' && e.data.pid === brainPid)).toBe(true);
    const second_brain = JSON.parse(second.stdout) as { brainPid: number };
    pids.push(second_brain.brainPid);

    // The same tasks with an edited key (here the base and a criterion) are never silently attached:
    // refused naming the difference while the old plan waits at the gate, a new plan once it is rejected.
    writeFileSync(file, PLAN.replace('    prompt: change a\n', '    prompt: change a\n    base: main\n').replace('"a is changed"', '"a is changed twice"'));
    const changed = runCli(['run', file, '--detach', '--json'], repo.dir, KEY);
    expect(changed.code, changed.stderr).toBe(1);
    expect(changed.stderr).toContain(`differs from it in tasks.t1.acceptance.criteria, tasks.t1.base`);
    expect(changed.stderr).toContain(`polly plan reject ${firstOut.plan}`);
    expect(Object.keys((await store.read()).plans)).toEqual([firstOut.plan]);
    expect(runCli(['plan', 'reject', firstOut.plan], repo.dir).code).toBe(0);
    const fresh = runCli(['run', file, '--detach', '--json'], repo.dir, KEY);
    expect(fresh.code, fresh.stderr).toBe(0);
    const freshOut = JSON.parse(fresh.stdout) as { plan: string };
    expect(freshOut.plan).not.toBe(firstOut.plan);
    expect((await store.read()).plans[freshOut.plan]?.tasks[0]?.base).toBe('main');

    // Nothing approved yet: resume has nothing to do.
    const resume = runCli(['resume'], repo.dir);
    expect(resume.code).toBe(0);
    expect(resume.stdout).toContain('nothing to resume');
    expect(runCli(['resume', 'p99'], repo.dir).code).toBe(1);
  });
});
