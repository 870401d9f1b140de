/** The sandbox refusal reader (brain/task-tools/sandbox-refusals.ts) on captured tool output. */
import { describe, expect, it } from 'vitest';
import { refusalLines, refusalReason, turnRefusals } from '../../../brain/task-tools/sandbox-refusals.js';

describe('sandbox refusals', () => {
  it('shows the terminal escapes of a worker-chosen path instead of passing them to the terminal', () => {
    const lines = refusalLines(['sh: 1: cannot create /r/esc\u001b]0;PWNED\u0007\u001b[2J: Read-only file system\n']);
    expect(lines).toEqual(['sh: 1: cannot create /r/esc\\x1b]0;PWNED\\x07\\x1b[2J: Read-only file system']);
  });

  it('keeps the distinct EROFS lines git, the shell and node print, and nothing else', () => {
    const git = "fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': Unable to create '/r/.git/refs/heads/main.lock': Read-only file system";
    const sh = 'attack.sh: 13: cannot create /r/.git/hooks/post-commit: Read-only file system';
    const node = "Error: EROFS: read-only file system, open '/r/PWNED'";
    expect(refusalLines([`ok\n${git}\n${sh}\n${git}`, 'all good'])).toEqual([git, sh]);
    expect(refusalLines([node])).toEqual([node]);
    expect(refusalLines(Array.from({ length: 9 }, (_, i) => `x${i}: Read-only file system`))).toHaveLength(5);
    expect(
      turnRefusals([
        { type: 'tool_result', id: '1', isError: true, output: sh },
        { type: 'text', text: 'I will now write Read-only file system into my reply' },
      ]),
    ).toEqual([sh]);
    expect(refusalReason('acceptance', [sh])).toBe(`sandbox refused a write outside the worktree during acceptance: ${sh}`);
  });
});
