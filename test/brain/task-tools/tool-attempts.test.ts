/**
 * A read-only worker's calls of tools its role was not given (brain/task-tools/tool-attempts.ts),
 * read from the normalised event stream: the role's own tools pass, every other call is named with
 * its arguments, control characters escaped, the first call of each tool first.
 */
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { readOnlyRoleTools } from '../../../workers/agents/role-tools.js';
import { toolAttemptReason, toolAttempts } from '../../../brain/task-tools/tool-attempts.js';
import { undeclaredToolCalls } from '../../../workers/agents/codex-rollout.js';

const call = (tool: string, input: unknown): AgentEvent => ({ type: 'tool_call', id: null, tool, input });

describe('toolAttempts', () => {
  it("names each call outside the role's tools, the first of each tool first, escapes shown", () => {
    const events: AgentEvent[] = [
      call('read', { path: 'DIFF.patch' }),
      { type: 'tool_result', id: null, isError: false, output: 'diff …' },
      call('bash', { command: 'echo a > x' }),
      call('bash', { command: 'echo a > x' }),
      call('bash', { command: 'printf "\u001b]0;t\u0007\u009b2J"' }),
      call('ls', { path: '.' }),
      call('write', { path: 'y', content: 'z' }),
    ];
    expect(toolAttempts(events, readOnlyRoleTools('pi'))).toEqual([
      'bash {"command":"echo a > x"}',
      'write {"path":"y","content":"z"}',
      'bash {"command":"printf \\"\\u001b]0;t\\u0007\\x9b2J\\""}',
    ]);
    expect(toolAttempts(events, readOnlyRoleTools('pi'), 1)).toEqual(['bash {"command":"echo a > x"}']);
    expect(toolAttemptReason('the pi review turn', ['bash {}'])).toBe('the reviewer called tools its read-only role does not have during the pi review turn: bash {}');
  });

  it("passes every tool of each harness's read-only role, and a write of each", () => {
    const reads: AgentEvent[] = [call('Read', {}), call('Grep', {}), call('Glob', {}), call('Bash', { command: 'cat x' })];
    expect(toolAttempts(reads, readOnlyRoleTools('claude-code'))).toEqual([]);
    expect(toolAttempts([call('Write', { file_path: '/s/x' })], readOnlyRoleTools('claude-code'))).toEqual(['Write {"file_path":"/s/x"}']);
    expect(toolAttempts([call('read', {}), call('grep', {}), call('find', {}), call('ls', {})], readOnlyRoleTools('pi'))).toEqual([]);
    expect(toolAttempts([call('shell', { command: 'cat x' })], readOnlyRoleTools('codex'))).toEqual([]);
    expect(toolAttempts([call('apply_patch', { changes: [] })], readOnlyRoleTools('codex'))).toEqual(['apply_patch {"changes":[]}']);
  });

  it("reads codex's undeclared tool calls from its session file (its --json stream has no item for them)", () => {
    // Lines as codex 0.171.0 wrote them (test/confinement/reviewer-attacks.test.ts), trimmed.
    const rollout = [
      { timestamp: '2026-12-01T16:15:20.000Z', type: 'response_item', payload: { type: 'function_call', name: 'write_file', arguments: '{"path":"OLD"}', call_id: 'c0' } },
      { timestamp: '2026-12-01T16:15:20.100Z', type: 'response_item', payload: { type: 'function_call_output', call_id: 'c0', output: 'unsupported call: write_file' } },
      { timestamp: '2026-12-01T16:15:23.000Z', type: 'response_item', payload: { type: 'function_call', name: 'exec_command', arguments: '{"cmd":"cat x"}', call_id: 'c1' } },
      { timestamp: '2026-12-01T16:15:23.100Z', type: 'response_item', payload: { type: 'function_call_output', call_id: 'c1', output: 'x' } },
      {
        timestamp: '2026-12-01T16:15:24.192Z',
        type: 'response_item',
        payload: { type: 'function_call', name: 'write_file', arguments: '{"path":"REVIEWER-CALLED","content":"x"}', call_id: 'c2' },
      },
      { timestamp: '2026-12-01T16:15:24.232Z', type: 'response_item', payload: { type: 'function_call_output', call_id: 'c2', output: 'unsupported call: write_file' } },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n');
    const events = undeclaredToolCalls(`${rollout}\nnot json\n`, '2026-12-01T16:15:21.000Z');
    expect(events).toEqual([
      { type: 'tool_call', id: 'c2', tool: 'write_file', input: { path: 'REVIEWER-CALLED', content: 'x' } },
      { type: 'tool_result', id: 'c2', isError: true, output: 'unsupported call: write_file' },
    ]);
    expect(toolAttempts(events, readOnlyRoleTools('codex'))).toEqual(['write_file {"path":"REVIEWER-CALLED","content":"x"}']);
  });
});
