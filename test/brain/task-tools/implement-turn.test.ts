/**
 * The gate context of an implementer's turn names the repository's default branch (the one rule of
 * workers/git/repo.ts), never the task's base: a stacked task's base is another task's branch,
 * and the gate's default-branch rule must still guard main (issue 33 item 2).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import type { TaskRecord } from '../../../brain/registry/registry-schema.js';
import { implementTurn } from '../../../brain/task-tools/dispatch.js';
import type { TaskToolContext } from '../../../brain/task-tools/types.js';
import { sampleTask } from '../../helpers/registry-sample.js';
import { createTestRepo } from '../../helpers/git-repo.js';

describe('implementTurn', () => {
  it("fills the gate context's default branch from the repository, not from a stacked task's base", () => {
    const repo = createTestRepo();
    repo.git(['remote', 'set-head', 'origin', 'main']);
    const task: TaskRecord = { ...sampleTask('p2-t1'), worktree: `${repo.dir}/.worktrees/p2-t1`, branch: 'polly/p2-t1', baseBranch: 'polly/p1-t1' };
    const ctx = { repoRoot: repo.dir, config: DEFAULT_CONFIG, order: { id: 'o1', kind: 'tool', tool: 'dispatch', attempt: 1 }, agentEnv: {} } as unknown as TaskToolContext;
    const turn = implementTurn(ctx, task, 'do it', null);
    expect(turn.gateContext).toMatchObject({ repoRoot: repo.dir, branch: 'polly/p2-t1', defaultBranch: 'main' });
  });
});
