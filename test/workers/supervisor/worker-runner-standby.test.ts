/**
 * A standby worker runner (`worker-runner.js --standby <tag>`) pays the sandbox's one-time probes
 * while it waits for its turn (workers/sandbox/sandbox.ts `warmSandbox`), not when a dispatch claims
 * it (issue 33 item 6): before any claim it has written its seccomp filter file, the last of the
 * probes, and its log says what the probes answered (the Landlock tool-shell probe among them, a
 * perl process the claiming dispatch paid before); an end of input without a claim still ends it
 * and removes the file. Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { distPath } from '../../../brain/core/install-paths.js';
import { filterArch } from '../../../workers/sandbox/seccomp-filter.js';
import { toolShellSupport } from '../../../workers/sandbox/tool-shell.js';

describe('a standby worker runner', () => {
  it.skipIf(filterArch() === null)('has probed the sandbox before it is claimed, and ends on end of input', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'polly-standby-'));
    try {
      const child = spawn(process.execPath, [distPath('workers', 'supervisor', 'worker-runner.js'), '--standby', 'test-standby'], {
        env: { ...process.env, TMPDIR: tmp },
        stdio: ['pipe', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const seccompDir = () => readdirSync(tmp).find((f) => f.startsWith('polly-seccomp-'));
      const filter = () => {
        const d = seccompDir();
        return d === undefined ? undefined : readdirSync(join(tmp, d)).find((f) => f.endsWith('.bpf'));
      };
      const deadline = Date.now() + 60_000;
      while (filter() === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(filter(), 'the standby runner wrote no seccomp filter before any claim').toBeDefined();
      while (!stderr.includes('\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const shells = toolShellSupport();
      expect(stderr).toContain('[polly] standby test-standby');
      expect(stderr).toContain(shells.ok ? `tool shells on (Landlock ABI ${shells.abi})` : `tool shells off (${shells.why})`);
      child.stdin.end();
      expect(await exited).toBe(0);
      expect(seccompDir() === undefined || !existsSync(join(tmp, seccompDir() as string))).toBe(true);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
