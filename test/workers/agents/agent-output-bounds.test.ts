/**
 * The output bounds of an agent turn (workers/agents/agent-process.ts; `workers.limits`
 * output_line_kib and output_total_mib, issue 27 item 5): real child processes, one of them in the
 * real bubblewrap sandbox. On code without them the 100 MiB line is buffered and stored whole and
 * both runs end ok.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { scrubbedProcessEnv, spawnAgentProcess } from '../../../workers/agents/agent-process.js';
import { probeSandbox } from '../../../workers/sandbox/sandbox.js';
import type { SandboxSpec } from '../../../workers/sandbox/sandbox-spec.js';

const tmp = mkdtempSync(join(tmpdir(), 'polly-output-bounds-'));
const parseLine = (json: unknown): AgentEvent[] => [{ type: 'unknown', raw: json }];

describe('agent output bounds', () => {
  it('a 100 MiB stdout line is never buffered whole: stored cut with a marker, the turn ends bound_exceeded naming the key', async () => {
    // 100 MiB in 1 MiB writes, each after the last drained, then the end of the line.
    const code = `
      const chunk = 'x'.repeat(1024 * 1024);
      let n = 0;
      const next = () => { if (n++ < 100) process.stdout.write(chunk, next); else process.stdout.write('\\n{"t":"result"}\\n'); };
      next();`;
    const run = spawnAgentProcess({ command: process.execPath, args: ['-e', code], cwd: tmp, env: scrubbedProcessEnv(), parseLine, redact: [] });
    const r = await run.result;
    expect(r.status).toBe('bound_exceeded');
    expect(r.message).toContain('output line bound (4096 KiB');
    expect(r.message).toContain('workers.limits.output_line_kib');
    const cut = r.events.find((e) => e.type === 'unknown' && typeof e.raw === 'string' && e.raw.startsWith('xxx'));
    expect(cut).toBeDefined();
    const raw = (cut as { raw: string }).raw;
    expect(raw.length).toBeLessThan(4 * 1024 * 1024 + 200);
    expect(raw).toMatch(/\[polly: line cut at 4096 KiB; \d+ more characters dropped\]$/);
  }, 60_000);

  it.skipIf(!probeSandbox().ok)(
    'more than output_total_mib in all stops a sandboxed turn as bound_exceeded',
    async () => {
      const probe = probeSandbox();
      if (!probe.ok) return;
      const spec: SandboxSpec = {
        cwd: tmp,
        writable: [tmp],
        readOnly: [],
        hidden: [],
        home: tmp,
        tmpDir: null,
        network: { mode: 'none' },
        gitMetadata: { mode: 'read-only' },
        limits: { output_total_mib: 1 },
      };
      const code = `const line = JSON.stringify({t: 'x'.repeat(1000)}) + '\\n'; for (let i = 0; i < 3000; i++) process.stdout.write(line);`;
      const run = spawnAgentProcess({
        command: process.execPath,
        args: ['-e', code],
        cwd: tmp,
        env: scrubbedProcessEnv(),
        parseLine,
        redact: [],
        sandbox: { bwrap: probe.bwrap, spec },
      });
      const r = await run.result;
      expect(r.status).toBe('bound_exceeded');
      expect(r.message).toContain('total output bound (1 MiB, workers.limits.output_total_mib)');
      expect(r.events.length).toBeLessThan(1100);
    },
    60_000,
  );
});
