/**
 * `npm run demo` as a newcomer runs it: the whole loop on the bundled sample project with the
 * scripted model and the real claude/codex/pi CLIs. It must exit 0 with at least two ready PRs from
 * two vendors, a plan refused then admitted, and the default branch untouched (Polly never merges).
 * The repository lives under `/tmp` (not `os.tmpdir()`, which TMPDIR may move) with the sandbox on:
 * Codex once refused to start in a repository under the OS temp dir (its CODEX_HOME was there), so
 * the Codex task's `ready` here is the regression check for that.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { Registry } from '../../brain/registry/registry-schema.js';
import { git } from '../helpers/git-repo.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { stopTrackedBrains, trackBrains } from '../helpers/brain-cleanup.js';

const run = promisify(execFile);

describe('npm run demo', () => {
  afterAll(() => stopTrackedBrains());
  it('runs goal → refused plan → revised → approved → two vendors in parallel → cross-review → two ready PRs, main untouched', async () => {
    const dir = join(realpathSync(mkdtempSync('/tmp/polly-demo-test-')), 'demo');
    trackBrains(join(dir, 'stats'));
    const { stdout, stderr } = await run(process.execPath, ['dist/scripts/demo.js', '--dir', dir], {
      cwd: process.cwd(),
      env: process.env,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 280_000,
    });
    expect(stdout).toMatch(/^p1: REFUSED: plan-p1 \[refused\]$/m);
    expect(stdout).toMatch(/^p2: admitted: plan-p2 — paths explored: \d+ · states seen: \d+ · exhaustive within declared domains \[approved\]$/m);
    expect(stdout).toMatch(/p2-t1\s+claude-code\s+pi\s+ready\s+red → green\s+0\/1\s+#\d+ ready/);
    expect(stdout).toMatch(/p2-t2\s+codex\s+claude-code\s+ready\s+green\s+0\/0\s+#\d+ ready/);
    expect(stdout).toContain('Default branch main: unchanged, no merges');
    expect(stderr).toContain('t2/reviewer-vendor-differs');
    expect(stderr).toContain('x1: done'); // the read-only explore worker ran

    const repo = join(dir, 'stats');
    const reg = JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as Registry;
    const ready = Object.values(reg.tasks).filter((t) => t.purpose === 'implement' && t.status === 'ready');
    expect(new Set(ready.map((t) => t.worker))).toEqual(new Set(['claude-code', 'codex']));
    for (const t of ready) {
      expect(t.reviewer).not.toBe(t.worker);
      // Ran inside Polly's sandbox (a machine without bubblewrap fails closed here: no allow_unconfined).
      expect(t.unconfined ?? null).toBeNull();
      expect(t.pr?.state).toBe('ready');
      // one clean commit on the task branch, on the remote
      expect(git(join(dir, 'origin.git'), ['rev-list', '--count', `main..polly/${t.id}`])).toBe('1');
    }
    expect(reg.plans.p1?.gate).toBe('refused');
    expect(reg.plans.p2?.gate).toBe('approved');
    expect(git(join(dir, 'origin.git'), ['rev-list', '--count', 'main'])).toBe('1');
    // Every run (the schedule and each task) replays through the admitted workflow it ran under.
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(3);
  }, 300_000);
});
