/**
 * The shared trace assertion of the Brain and end-to-end suites: every workflow run in a
 * repository's registry replays through the admitted workflow it ran under
 * (brain/process/trace-check.ts, the same check as `polly check --run`), and the Brain journaled
 * no `run.trace_divergence`.
 */
import { expect } from 'vitest';
import { openRepoContext } from '../../brain/registry/repo-context.js';
import { createTraceChecker } from '../../brain/process/trace-check.js';
import { openRunStore } from '../../brain/registry/run-storage.js';
import { gitTestEnv } from './git-repo.js';

/** Assert that every run of the repository at `repoDir` conforms; returns how many runs were checked. */
export async function expectRunsConform(repoDir: string): Promise<number> {
  const ctx = await openRepoContext(repoDir, gitTestEnv());
  const journal = await ctx.store.journal();
  const runs = await openRunStore(ctx.repo.pollyDir, ctx.store);
  let lines: string[];
  try {
    const checker = createTraceChecker(await ctx.store.read(), await runs.store.listRuns(), await runs.store.journal(), ctx.config);
    lines = checker.runIds().map((id) => checker.check(id).line);
  } finally {
    await runs.store.close();
  }
  expect(lines.filter((l) => !l.startsWith('conforms:'))).toEqual([]);
  expect(journal.filter((e) => e.kind === 'run.trace_divergence').map((e) => e.data)).toEqual([]);
  return lines.length;
}
