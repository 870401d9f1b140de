/**
 * The progress of a task's long steps (brain/registry/task-progress.ts), on a real `.polly/` in a
 * temp dir: a step's record and its log as the Brain writes them, what readers make of them, and
 * when a record is not shown (the step ended, the task is final, the Brain that wrote it is gone).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emptyRegistry, type Registry } from '../../../brain/registry/registry-schema.js';
import { eventLine, followStep, lastLines, progressStamp, readProgress, taskNow } from '../../../brain/registry/task-progress.js';
import { runCheck } from '../../../workers/acceptance.js';
import { LOG_MAX_BYTES } from '../../../workers/proc/capped-log.js';
import { sampleTask } from '../../helpers/registry-sample.js';

function registry(brainPid: number | null, status = 'checking'): Registry {
  const reg = emptyRegistry();
  reg.tasks.t1 = { ...sampleTask('t1'), status } as Registry['tasks'][string];
  reg.brain = brainPid === null ? null : { pid: brainPid, startedAt: '2026-12-01T00:00:00.000Z', heartbeatAt: '2026-12-01T00:00:00.000Z' };
  return reg;
}

describe('task progress', () => {
  it("a step's record names the command running and its output as it comes; it is gone when the step ends", async () => {
    const pollyDir = mkdtempSync(join(tmpdir(), 'polly-progress-'));
    const step = followStep(pollyDir, 't1', 'checks', 'checks');
    const before = progressStamp(pollyDir, []);
    step.command('npm test');
    step.output(Buffer.from('ok 1 - adds\nok 2 - '));
    step.output(Buffer.from('subtracts\n'));
    step.command('npm run lint');
    step.output(Buffer.from('progress 10%\rprogress 60%\rprogress 100%'));
    expect(progressStamp(pollyDir, [])).not.toBe(before);
    const rec = readProgress(pollyDir, 't1')!;
    expect(rec).toMatchObject({ taskId: 't1', phase: 'checks', command: 'npm run lint', log: join(pollyDir, 'logs', 'checks-t1.log') });
    expect(readFileSync(rec.log!, 'utf8')).toBe('$ npm test\nok 1 - adds\nok 2 - subtracts\n$ npm run lint\nprogress 10%\rprogress 60%\rprogress 100%');
    const now = taskNow(pollyDir, registry(process.pid), 't1', Date.parse(rec.startedAt) + 12_400, 3)!;
    expect(now).toEqual({
      phase: 'checks',
      detail: 'npm run lint',
      since: rec.startedAt,
      elapsedS: 12,
      tool: null,
      lines: ['ok 2 - subtracts', '$ npm run lint', 'progress 100%'],
    });
    // Not shown for a final task, nor when the Brain that wrote it is gone.
    expect(taskNow(pollyDir, registry(process.pid, 'failed'), 't1', Date.now())).toBeNull();
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => dead.once('exit', r));
    expect(taskNow(pollyDir, registry(dead.pid!), 't1', Date.now())).toBeNull();
    step.end();
    expect(existsSync(join(pollyDir, 'progress', 't1.json'))).toBe(false);
    expect(taskNow(pollyDir, registry(process.pid), 't1', Date.now())).toBeNull();
  });

  it("a check's 100 MiB output line is not stored whole: its log keeps the first 16 MiB of each command and says how much it left out; the next command is logged; the check's tail still reaches the worker", async () => {
    const pollyDir = mkdtempSync(join(tmpdir(), 'polly-progress-'));
    const step = followStep(pollyDir, 't1', 'checks', 'checks');
    const run = (command: string) => {
      step.command(command);
      return runCheck(command, { cwd: pollyDir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeoutSeconds: 120, onOutput: (c) => step.output(c) });
    };
    const line = "head -c 104857600 /dev/zero | tr '\\0' x; echo ' the end'";
    const first = await run(line);
    expect(first.exitCode).toBe(0);
    expect(first.output).toMatch(/x the end\n$/);
    const log = readProgress(pollyDir, 't1')!.log!;
    await run('echo second');
    step.end();
    const size = statSync(log).size;
    expect(size).toBeGreaterThan(LOG_MAX_BYTES);
    expect(size).toBeLessThan(LOG_MAX_BYTES + 1024);
    const text = readFileSync(log, 'utf8');
    expect(text.startsWith(`$ ${line}\nxxx`)).toBe(true);
    expect(text.slice(-400)).toMatch(
      new RegExp(
        `x\\n\\[polly: output cut at ${LOG_MAX_BYTES} bytes: this log keeps no more of this command\\]\\n\\[polly: ${100 * 1024 * 1024 + 9 - LOG_MAX_BYTES} bytes of output not kept\\]\\n\\$ echo second\\nsecond\\n$`,
      ),
    );
  }, 120_000);

  it("an agent's events as lines: the tool call and its result, text, the turn's end", () => {
    expect(eventLine({ type: 'tool_call', tool: 'bash', input: { command: 'npm test' } })).toBe('→ bash npm test');
    expect(eventLine({ type: 'tool_result', output: 'line 1\nall 12 passed\n', isError: false })).toBe('← all 12 passed');
    expect(eventLine({ type: 'tool_result', output: '', isError: true })).toBe('✗ (no output)');
    expect(eventLine({ type: 'text', text: 'Now I add\n the test.' })).toBe('Now I add the test.');
    expect(eventLine({ type: 'usage', inputTokens: 1 })).toBeNull();
    expect(lastLines(`a\n\n${'x'.repeat(400)}\n`, 2)).toEqual(['a', `${'x'.repeat(299)}…`]);
  });
});
