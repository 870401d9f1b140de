// `polly run`: the admission line once per stream; it refuses, before anything is written, a plan
// whose workers or reviewers have no model key (the variables named, never a value); and a plan whose claude-code worker or reviewer
// Claude Code would refuse as root (no workers.claude-code.allow_root_sandbox): the pure check on
// every machine, and the real CLI as root (exit 1, the whole fix on stderr, no goal, no Brain).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refuseUnstartableAgents } from '../../../brain/plan/plan-agents.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { isPollyError } from '../../../brain/core/errors.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { planAgentUses } from '../../../brain/plan/plan-agents.js';
import type { PlanTaskSpec } from '../../../brain/registry/registry-schema.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

const task = (key: string, worker: PlanTaskSpec['worker'], reviewer: PlanTaskSpec['reviewer'], purpose: PlanTaskSpec['purpose'] = 'implement') =>
  ({ key, worker, reviewer, purpose }) as Pick<PlanTaskSpec, 'key' | 'worker' | 'reviewer' | 'purpose'> as PlanTaskSpec;

/** Both vendors' keys set (placeholders): only the root check can refuse. */
const KEYS = { ANTHROPIC_API_KEY: 'sk-ant-placeholder', OPENAI_API_KEY: 'sk-placeholder' };

describe('polly run preflights the model keys of the harnesses the plan starts', () => {
  it('names each harness without a key, its tasks and roles, and the variables, never a value', () => {
    const tasks = [task('a', 'pi', null), task('b', 'codex', 'pi'), task('c', 'claude-code', 'pi')];
    let thrown: unknown = null;
    try {
      refuseUnstartableAgents(tasks, DEFAULT_CONFIG, { OPENAI_API_KEY: 'sk-the-secret-value', PATH: '/usr/bin' }, false);
    } catch (error) {
      thrown = error;
    }
    expect(isPollyError(thrown, 'agent_refused')).toBe(true);
    const message = (thrown as Error).message;
    expect(message).toContain('claude-code (for a (reviewer), c (worker)) has no model key: none of ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN is set. Fix: export ANTHROPIC_API_KEY');
    expect(message).not.toContain('codex (for'); // its key is set
    expect(message).not.toContain('sk-the-secret-value');
    // An empty variable is no key; pi on its default provider cannot be checked and passes.
    expect(() => refuseUnstartableAgents([task('b', 'codex', 'pi')], DEFAULT_CONFIG, { OPENAI_API_KEY: '' }, false)).toThrow(
      /codex \(for b \(worker\)\) has no model key: none of OPENAI_API_KEY is set/,
    );
    expect(() => refuseUnstartableAgents([task('d', 'pi', 'codex')], DEFAULT_CONFIG, { OPENAI_API_KEY: 'x' }, false)).not.toThrow();
  });
});

describe('polly run as root', () => {
  it('names each task that would start claude-code, as worker or as the default reviewer, with the whole fix', () => {
    // pi's default reviewer is the first of review.pairs.pi: claude-code
    const tasks = [task('a', 'pi', null), task('b', 'codex', 'pi'), task('c', 'claude-code', 'pi'), task('d', 'pi', null, 'explore')];
    expect(planAgentUses(tasks, DEFAULT_CONFIG).map((u) => `${u.task}:${u.role}:${u.harness}`)).toEqual([
      'a:worker:pi',
      'a:reviewer:claude-code',
      'b:worker:codex',
      'b:reviewer:pi',
      'c:worker:claude-code',
      'c:reviewer:pi',
      'd:worker:pi',
    ]);
    let thrown: unknown = null;
    try {
      refuseUnstartableAgents(tasks, DEFAULT_CONFIG, KEYS, true);
    } catch (error) {
      thrown = error;
    }
    expect(isPollyError(thrown, 'agent_refused')).toBe(true);
    expect((thrown as Error).message).toContain('for a (reviewer), c (worker), and it would be refused.');
    expect((thrown as Error).message).toContain('set `workers: {claude-code: {allow_root_sandbox: true}}` in .polly/config.yaml (only on a disposable machine or container).');
    // not root, or root with the key set, or no claude-code at all: nothing to refuse
    expect(() => refuseUnstartableAgents(tasks, DEFAULT_CONFIG, KEYS, false)).not.toThrow();
    const allowed = structuredClone(DEFAULT_CONFIG);
    allowed.workers['claude-code'].allow_root_sandbox = true;
    expect(() => refuseUnstartableAgents(tasks, allowed, KEYS, true)).not.toThrow();
    expect(() => refuseUnstartableAgents([task('b', 'codex', 'pi')], DEFAULT_CONFIG, KEYS, true)).not.toThrow();
  });

  it.runIf(process.getuid?.() === 0)('the CLI refuses the plan before proposing it: exit 1, the fix on stderr, no goal and no Brain', async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const file = join(repo.root, 'plan.yaml');
    writeFileSync(
      file,
      'goal: one change\ntasks:\n  - key: t1\n    title: Change a\n    purpose: implement\n    worker: pi\n    prompt: change a\n    acceptance:\n      commands: [node --test]\n',
    );
    const r = runCli(['run', file, '--yes'], repo.dir);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('t1 (reviewer)');
    expect(r.stderr).toContain('set `workers: {claude-code: {allow_root_sandbox: true}}` in .polly/config.yaml');
    expect(r.stdout).toBe('');
    const reg = await createFileRegistryStore(join(repo.dir, '.polly')).read();
    expect([Object.keys(reg.goals), Object.keys(reg.plans), reg.brain]).toEqual([[], [], null]);
    expect(existsSync(join(repo.dir, '.polly', 'brain.log'))).toBe(false);
  });
});

describe('polly run output', () => {
  it('a plan whose reviewer has no model key: refused before it is proposed (exit 1, the variable named on stderr, no goal, no Brain)', async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const file = join(repo.root, 'plan.yaml');
    writeFileSync(
      file,
      'goal: one change\ntasks:\n  - key: t1\n    title: Change a\n    purpose: implement\n    worker: pi\n    reviewer: codex\n    prompt: change a\n    acceptance:\n      commands: [node --test]\n',
    );
    const r = runCli(['run', file, '--yes'], repo.dir, { OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('codex (for t1 (reviewer)) has no model key: none of OPENAI_API_KEY is set. Fix: export OPENAI_API_KEY');
    expect(r.stdout).toBe('');
    const reg = await createFileRegistryStore(join(repo.dir, '.polly')).read();
    expect([Object.keys(reg.goals), Object.keys(reg.plans), reg.brain]).toEqual([[], [], null]);
  });

  it('a refused plan: the checker line once on stdout, the counterexamples on stderr, no Brain', async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const file = join(repo.root, 'plan.yaml');
    // pi reviewing pi: the same vendor, refused by the checker
    writeFileSync(
      file,
      'goal: one change\ntasks:\n  - key: t1\n    title: Change a\n    purpose: implement\n    worker: pi\n    reviewer: pi\n    prompt: change a\n    acceptance:\n      commands: [node --test]\n',
    );
    const r = runCli(['run', file], repo.dir);
    expect(r.code, r.stderr).toBe(1);
    const line = r.stdout.trim();
    expect(line).toMatch(/^REFUSED: /);
    expect(`${r.stdout}\n${r.stderr}`.split(line).length - 1).toBe(1);
    expect(r.stderr).not.toContain('REFUSED:');
    expect((await createFileRegistryStore(join(repo.dir, '.polly')).read()).brain).toBeNull();
  });
});
