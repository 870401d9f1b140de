/**
 * One answer to "may this role write?" (brain/core/vocabulary.ts `isReadOnlyRole`): the gate's
 * write, mutation and forge rules and the dispatch tool's turn request (which the worker runner
 * and its sandbox take as it is) agree for every role under every `purpose_guard.read_only` — the
 * default, one that drops review (review still never writes), and one that lists implement.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { isReadOnlyRole, PURPOSES, type Purpose } from '../../../brain/core/vocabulary.js';
import { workerTurnRequest } from '../../../brain/task-tools/dispatch.js';
import { decide } from '../../../gate/decide.js';
import type { GateContext, GatePolicy } from '../../../gate/types.js';

const WT = '/repo/.worktrees/t1';
const context: GateContext = { repoRoot: '/repo', worktree: WT, branch: 'polly/t1', defaultBranch: 'main', home: '/home/dev', protectedDirs: [] };

function policyWith(readOnly: Purpose[]): GatePolicy {
  const p = structuredClone(DEFAULT_CONFIG.policies);
  p.purpose_guard.read_only = readOnly;
  return p;
}

/** What the gate says about `role` writing a file in its worktree, running a command that changes things, and opening a PR. */
function gateLetsWrite(role: Purpose, policy: GatePolicy): { write: boolean; mutate: boolean; forge: boolean } {
  const write = decide({ type: 'tool', tool: 'write', input: `${WT}/src/a.ts`, cwd: WT, role }, policy, context).decision === 'allow';
  const mutate = decide({ type: 'tool', tool: 'bash', input: 'touch src/b.ts', cwd: WT, role }, policy, context).decision === 'allow';
  const forge = decide({ type: 'forge', operation: 'open_pr', role }, policy, context).decision === 'allow';
  return { write, mutate, forge };
}

describe('one read-only answer', () => {
  it('only implement and brain may write, and not when the list names them; any other role is read-only whatever the list says', () => {
    expect(PURPOSES.filter((p) => !isReadOnlyRole(p))).toEqual(['implement']);
    expect(isReadOnlyRole('brain')).toBe(false);
    expect(isReadOnlyRole('review', [])).toBe(true);
    expect(isReadOnlyRole('someone-else', [])).toBe(true);
    expect(isReadOnlyRole('implement', ['implement'])).toBe(true);
  });

  it.each([
    ['the default', ['review', 'explore', 'search']],
    ['review dropped from the list', ['explore', 'search']],
    ['implement listed', ['implement', 'review', 'explore', 'search']],
  ] as [string, Purpose[]][])('gate and dispatch agree for every purpose under %s', (_name, readOnly) => {
    const policy = policyWith(readOnly);
    const config = { ...DEFAULT_CONFIG, policies: policy };
    for (const purpose of PURPOSES) {
      const ro = isReadOnlyRole(purpose, readOnly);
      const turn = workerTurnRequest(config, {
        taskId: 't1',
        orderId: 'o1',
        harness: 'pi',
        purpose,
        cwd: WT,
        prompt: 'x',
        resumeSessionId: null,
        model: null,
      } as Parameters<typeof workerTurnRequest>[1]);
      expect(turn.readOnly, `${purpose}: the turn request`).toBe(ro);
      expect(gateLetsWrite(purpose, policy), `${purpose}: the gate`).toEqual({ write: !ro, mutate: !ro, forge: !ro });
    }
  });
});
