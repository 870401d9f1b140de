// The `polly` binary itself: version, help, unknown commands, exit codes.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/registry-cli.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; bin: Record<string, string> };

describe('polly CLI', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'polly-cli-'));

  it('--version prints the package version (and JSON with --json)', () => {
    expect(runCli(['--version'], cwd)).toEqual({ code: 0, stdout: `polly ${pkg.version}\n`, stderr: '' });
    expect(JSON.parse(runCli(['--version', '--json'], cwd).stdout)).toEqual({ version: pkg.version });
    expect(pkg.bin.polly).toBe('dist/brain/cli.js');
  });

  it('help lists the commands and exits 0; no command prints help and exits 2', () => {
    const r = runCli(['help'], cwd);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\s+init\s+set up Polly/m);
    expect(r.stdout).toMatch(/^\s+status\s+show goals/m);
    expect(r.stdout).toContain('Polly never merges');
    const none = runCli([], cwd);
    expect(none.code).toBe(2);
    expect(none.stdout).toContain('Usage: polly <command>');
  });

  it('help <command> and <command> --help print its usage', () => {
    expect(runCli(['help', 'init'], cwd).stdout).toContain('Usage: polly init [--json]');
    expect(runCli(['status', '--help'], cwd).stdout).toContain('Usage: polly status [--json]');
  });

  it('an unknown command or option exits 2 naming it', () => {
    const r = runCli(['frobnicate'], cwd);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"frobnicate"');
    const j = runCli(['frobnicate', '--json'], cwd);
    expect(JSON.parse(j.stdout).error).toMatchObject({ code: 'unknown_command', command: 'frobnicate' });
    expect(runCli(['--frob'], cwd).code).toBe(2);
  });
});
