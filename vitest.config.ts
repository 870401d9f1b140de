import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The suite's longest files, started first, longest first: the 40 longest of CI run 40 (a fresh
 * 2-core machine, 2 workers, 2026-12-07: 1,662 s wall). A file's time is what it held its worker:
 * from the end of the file before it on that worker to its own last test's end, so what runs
 * before its first test (its import and beforeAll, and the previous file's afterAll) counts too.
 * The JSON reporter's per-file times leave that out: real-go-project showed 7 s there against
 * 101 s held, base-red 2 s against 77 s, and the earlier list (ranked by those times) left
 * base-red out, to start in the last 4 minutes of the run. Without a
 * results cache (CI's fresh clone) vitest orders files by size, which started some of these last,
 * so one worker ran alone at the end. Files not listed keep vitest's order after these. A stale
 * entry only loses the gain; test/house/longest-first.test.ts fails on an entry naming no file.
 */
export const LONGEST_FIRST = [
  'test/brain/ui/ui-dashboard.test.ts', // 112 s
  'test/e2e/real-go-project.test.ts', // 101 s, 93 s of it before its first test
  'test/e2e/landing-order.test.ts', // 89 s
  'test/e2e/pr-fix-rounds-github.test.ts', // 84 s
  'test/e2e/real-npm-project.test.ts', // 78 s, 77 s of it before its first test
  'test/e2e/base-red.test.ts', // 77 s, 75 s of it before its first test
  'test/e2e/try-go-on.test.ts', // 76 s
  'test/e2e/registry-loss-rerun-github.test.ts', // 76 s
  'test/e2e/long-step-progress.test.ts', // 75 s
  'test/e2e/pr-fix-rounds.test.ts', // 73 s
  'test/brain/process/brain-process.test.ts', // 71 s
  'test/e2e/pr-goal-scope-github.test.ts', // 71 s
  'test/brain/commands/doctor-command.test.ts', // 66 s
  'test/confinement/attack-suite.test.ts', // 66 s, 21 s of it before its first test
  'test/brain/forge/github-forge.test.ts', // 65 s
  'test/brain/task-tools/cost-budget-real.test.ts', // 64 s
  'test/e2e/e2e-crash.test.ts', // 62 s
  'test/brain/ui/ui-pages.test.ts', // 62 s
  'test/e2e/real-rust-project.test.ts', // 61 s, 41 s of it before its first test
  'test/e2e/e2e-resume.test.ts', // 57 s
  'test/e2e/resource-bounds.test.ts', // 50 s
  'test/workers/supervisor/orchestration-workers.test.ts', // 49 s
  'test/scripts/demo-unconfined.test.ts', // 48 s
  'test/e2e/brain-stop-leftovers.test.ts', // 47 s
  'test/brain/forge/issue-gate.test.ts', // 46 s
  'test/confinement/read-view.test.ts', // 45 s, 45 s of it before its first test
  'test/brain/forge/landing-sync.test.ts', // 44 s
  'test/confinement/reviewer-attacks.test.ts', // 43 s, 43 s of it before its first test
  'test/brain/forge/local-forge-cli.test.ts', // 42 s
  'test/e2e/try-command.test.ts', // 39 s
  'test/brain/forge/github-watch.test.ts', // 38 s
  'test/brain/config/tool-exclusions.test.ts', // 38 s
  'test/e2e/budget-retry.test.ts', // 37 s
  'test/e2e/io-fault.test.ts', // 37 s
  'test/workers/git/orchestration-git.test.ts', // 36 s
  'test/brain/task-tools/pr-step-local.test.ts', // 33 s
  'test/brain/process/brain-lock.test.ts', // 32 s, 23 s of it before its first test
  'test/brain/commands/init-command.test.ts', // 32 s
  'test/brain/forge/after-merge.test.ts', // 32 s
  'test/workers/agents/run-to-green-concurrent.test.ts', // 31 s
];

class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((p) => f.moduleId.endsWith(`/${p}`));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    return [...(await super.sort(files))].sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ first when it is not the build of the sources on disk (test/helpers/build-once.ts);
    // at the end, lists the suites skipped for a missing system package and fails a file that ran
    // 0 cases without saying why (test/helpers/run-summary.ts).
    globalSetup: ['test/helpers/build-once.ts', 'test/helpers/run-summary.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Real processes and real git: keep parallelism to the machine's two cores.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirstSequencer },
  },
});
