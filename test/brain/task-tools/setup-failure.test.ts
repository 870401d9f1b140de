/**
 * A failing worktrees.setup, as the task ends up saying it: the last lines of its output survive
 * the run's end (runEndReason keeps the tool's whole reason, not the note's first line), and an
 * output that looks like a network failure names worktrees.setup_network. Pure: outputs in the
 * shape npm 10 and pip 24 print without a network (written here, not captured on this machine),
 * a run record and journal as the runtime writes them.
 */
import { describe, expect, it } from 'vitest';
import { runEndReason } from '../../../brain/process/order-executor.js';
import { setupFailureReason } from '../../../brain/task-tools/dispatch.js';
import type { RunRecord } from '../../../workflows/run/run-records.js';
import type { SetupResult } from '../../../workers/git/worktree-manager.js';

const setup = (command: string, output: string): SetupResult => ({
  command,
  exitCode: 1,
  timedOut: false,
  durationMs: 2100,
  output,
  logPath: '/r/.polly/logs/worktree-setup-p1-t1.log',
  refGuard: null,
  inputs: {},
});

// npm 10, `npm ci` without a network (its error lines' shape)
const NPM_OFFLINE =
  'npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error errno EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\nnpm error A complete log of this run can be found in: /tmp/home/.npm/_logs/x-debug-0.log\n';
// pip 24 without a network (its retry warning's shape)
const PIP_OFFLINE =
  "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/pytest/\nERROR: Could not find a version that satisfies the requirement pytest (from versions: none)\nERROR: No matching distribution found for pytest\n";

describe('a failing worktrees.setup', () => {
  it('names worktrees.setup_network when its output looks like a network failure, and only then', () => {
    const npm = setupFailureReason(setup('npm ci', NPM_OFFLINE), false, 'p1-t1');
    expect(npm).toContain('Last lines:\nnpm error code EAI_AGAIN');
    expect(npm).toContain(
      'This looks like a network failure ("EAI_AGAIN"): worktrees.setup runs without network (worktrees.setup_network is false). If it must fetch packages, set worktrees: {setup_network: true} in .polly/config.yaml.',
    );
    expect(npm.split('\n').at(-1)).toBe('Fix the command in .polly/config.yaml (worktrees.setup) or the project, then run the task again: polly retry p1-t1');
    expect(setupFailureReason(setup('.venv/bin/pip install -r requirements.txt', PIP_OFFLINE), false, 'p1-t1')).toContain('network failure ("NewConnectionError")');
    expect(setupFailureReason(setup('npm ci', NPM_OFFLINE), true, 'p1-t1')).toContain('although worktrees.setup has network (worktrees.setup_network: true): check');
    const plain = setupFailureReason(setup('npm ci', 'npm error code EUSAGE\nnpm error The npm ci command can only install with an existing package-lock.json\n'), false, 'p1-t1');
    expect(plain).not.toContain('network');
  });

  it("the task's reason after its run ended keeps the setup's last lines and the fix (not the first line alone)", () => {
    const reason = setupFailureReason(setup('npm ci', NPM_OFFLINE), false, 'p1-t1');
    const run = { id: 'r1', status: 'finished', outcome: 'failed', state: { state: 'failed', vars: {} } } as unknown as RunRecord;
    const journal = [
      { seq: 1, at: '', kind: 'run.reported', data: { run: 'r1', applied: 'WORKER_FAILED', note: `dispatch: ${reason.split('\n')[0]}` } },
      { seq: 2, at: '', kind: 'run.action', data: { run: 'r1', action: 'WORKER_FAILED' } },
    ];
    expect(runEndReason(run, journal, { feedback: null, statusReason: reason })).toBe(reason);
    // A worker that failed on its own still says so, with the note.
    const crashed = [{ ...journal[0]!, data: { ...journal[0]!.data, note: 'dispatch: agent_exited: the worker crashed' } }, journal[1]!];
    expect(runEndReason(run, crashed, { feedback: null, statusReason: 'agent_exited: the worker crashed' })).toBe('the worker failed: agent_exited: the worker crashed');
  });
});
