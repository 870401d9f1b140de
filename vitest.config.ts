import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The suite's longest files, started first, longest first (the 31 longest of a full run on 2
 * cores, 2026-12-04, load 3-6, 1,034 s wall for 1,931 s of files; each file's time as the default
 * reporter prints it, hooks included). Without a results cache (CI's fresh clone) vitest orders
 * files by size, which started some of these last, so one worker ran alone at the end (wall
 * 1,145 s against 1,938 s of files on 2 workers). Files not listed keep vitest's order after
 * these. A stale entry only loses the gain.
 */
const LONGEST_FIRST = [
  'test/e2e/pr-fix-rounds.test.ts',
  'test/brain/forge/github-forge.test.ts',
  'test/e2e/real-go-project.test.ts',
  'test/e2e/registry-loss-rerun-github.test.ts',
  'test/e2e/pr-goal-scope-github.test.ts',
  'test/e2e/try-go-on.test.ts',
  'test/e2e/e2e-resume.test.ts',
  'test/confinement/attack-suite.test.ts',
  'test/e2e/landing-order.test.ts',
  'test/e2e/brain-stop-leftovers.test.ts',
  'test/e2e/pr-fix-rounds-github.test.ts',
  'test/scripts/demo-unconfined.test.ts',
  'test/brain/process/brain-process.test.ts',
  'test/e2e/real-rust-project.test.ts',
  'test/e2e/budget-retry.test.ts',
  'test/brain/task-tools/cost-budget-real.test.ts',
  'test/e2e/resource-bounds.test.ts',
  'test/e2e/e2e-crash.test.ts',
  'test/brain/ui/ui-dashboard.test.ts',
  'test/brain/commands/doctor-command.test.ts',
  'test/confinement/reviewer-attacks.test.ts',
  'test/brain/forge/github-watch.test.ts',
  'test/e2e/io-fault.test.ts',
  'test/e2e/real-python-project.test.ts',
  'test/e2e/real-npm-project.test.ts',
  'test/workers/supervisor/orchestration-workers.test.ts',
  'test/brain/forge/local-forge-cli.test.ts',
  'test/brain/task-tools/pr-step-local.test.ts',
  'test/brain/forge/landing-sync.test.ts',
  'test/confinement/read-view.test.ts',
  'test/workers/metering/metering-real.test.ts',
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
