import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatCheckFeedback, runAcceptance, runCheck } from '../../workers/acceptance.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'polly-acc-')));

describe('acceptance checks run by Polly', () => {
  it('is green only when every command exits 0', async () => {
    const green = await runAcceptance({ cwd: dir, commands: ['true', 'echo ok'], timeoutSeconds: 10 });
    expect(green.green).toBe(true);
    expect(green.results.map((r) => r.exitCode)).toEqual([0, 0]);
    expect(green.results[1]?.output).toContain('ok');

    const red = await runAcceptance({ cwd: dir, commands: ['echo boom >&2; exit 3', 'echo never'], timeoutSeconds: 10 });
    expect(red.green).toBe(false);
    expect(red.results).toHaveLength(1);
    expect(red.results[0]).toMatchObject({ exitCode: 3, timedOut: false });
    expect(red.results[0]?.output).toContain('boom');
    expect(formatCheckFeedback(red.results)).toMatch(/\$ echo boom >&2; exit 3\n\(exit code 3\)\nboom/);
  });

  it('kills the whole process group on timeout, leaving no child behind', async () => {
    const marker = `polly-sleep-${process.pid}-${Date.now()}`;
    const result = await runCheck(`node -e 'setTimeout(() => {}, 30000)' ${marker} & sleep 30`, { cwd: dir, timeoutSeconds: 1 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    // The result comes back when the group is dead (the node child holds the output pipe open).
    expect(result.durationMs).toBeLessThan(10_000);
    await new Promise((r) => setTimeout(r, 200));
    const { execSync } = await import('node:child_process');
    const ps = () =>
      execSync('ps -eo args', { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes(marker) && !l.includes('ps -eo'));
    expect(ps()).toEqual([]);
  });

  it('runs in the given directory with CI=true and the caller env', async () => {
    const result = await runCheck('pwd; echo "CI=$CI PORT=$PORT"', { cwd: dir, timeoutSeconds: 5, env: { ...process.env, PORT: '4321' } });
    expect(result.output).toContain(dir);
    expect(result.output).toContain('CI=true PORT=4321');
  });

  it('keeps only the tail of long output', async () => {
    const result = await runCheck('seq 1 200000', { cwd: dir, timeoutSeconds: 10, keepBytes: 1000 });
    expect(result.output.length).toBeLessThanOrEqual(1000);
    expect(result.output.trimEnd().endsWith('200000')).toBe(true);
  });
});
