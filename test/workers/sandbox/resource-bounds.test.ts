/**
 * The pure parts of workers/sandbox/resource-bounds.ts and brain/core/io-fault.ts: the bound named
 * with its limit and key, the hits read from a command's end, the wrapper's argv per mechanism, the
 * I/O fault codes, and the doctor's words where processes cannot be bounded. The real sandbox runs
 * them in test/e2e/resource-bounds.test.ts and test/e2e/io-fault.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  boundHit,
  describeBoundsMechanism,
  exitBoundHits,
  insideBoundsArgv,
  resolveLimits,
  TMP_FULL_MARKER,
  type BoundsMechanism,
} from '../../../workers/sandbox/resource-bounds.js';
import { diskInfo, ioFaultCode } from '../../../brain/core/io-fault.js';

const rlimitRoot: BoundsMechanism = { kind: 'rlimit', cgroups: [], prlimit: '/usr/bin/prlimit', processesBounded: false, cgroupWhyNot: 'no cgroup v2 hierarchy' };

describe('resource bounds', () => {
  it('names the bound, its limit and the key that raises it; config values override the defaults', () => {
    expect(resolveLimits({ max_processes: 64 })).toMatchObject({ max_processes: 64, tmp_mib: 1024, output_line_kib: 4096 });
    const hit = boundHit('processes', { max_processes: 64 });
    expect(hit).toMatchObject({ bound: 'processes', limit: '64 processes', key: 'workers.limits.max_processes' });
    expect(hit.message).toContain('raise workers.limits.max_processes in .polly/config.yaml');
    expect(boundHit('output_line', null).limit).toBe('4096 KiB');
  });

  it('reads file size, /tmp and (with rlimits) fork failures from how a command ended', () => {
    expect(exitBoundHits({ exitCode: 153 }, '')).toEqual(['file_size']);
    expect(exitBoundHits({ exitCode: null, signal: 'SIGXFSZ' }, '')).toEqual(['file_size']);
    expect(exitBoundHits({ exitCode: 1 }, `head: error writing\n${TMP_FULL_MARKER}\n`)).toEqual(['tmp']);
    expect(exitBoundHits({ exitCode: 1 }, 'bash: fork: retry: Resource temporarily unavailable', rlimitRoot)).toEqual(['processes']);
    expect(exitBoundHits({ exitCode: 1 }, 'bash: fork: retry: Resource temporarily unavailable', { kind: 'cgroup-v2' })).toEqual([]);
    expect(exitBoundHits({ exitCode: 1 }, 'FAILED test_x')).toEqual([]);
  });

  it('sets the file size always, and processes and memory by rlimit only without a cgroup', () => {
    const cg: BoundsMechanism = { ...rlimitRoot, kind: 'cgroup-v1', processesBounded: true, cgroupWhyNot: null };
    const inCgroup = insideBoundsArgv(cg, { file_size_mib: 2 });
    expect(inCgroup.slice(0, 3)).toEqual(['/usr/bin/prlimit', `--fsize=${2 * 1024 * 1024}`, '--']);
    const rl = insideBoundsArgv(rlimitRoot, { max_processes: 99 });
    expect(rl).toContain('--nproc=99');
    expect(rl.some((a) => a.startsWith('--data='))).toBe(true);
    expect(insideBoundsArgv({ ...rlimitRoot, prlimit: null }, {})[0]).toBe('/bin/sh');
  });

  it('polly doctor says when processes are not bounded (root without a cgroup), and why', () => {
    const lines = describeBoundsMechanism(rlimitRoot, {}).join('\n');
    expect(lines).toContain('NOT bounded: processes (RLIMIT_NPROC does not apply to uid 0');
    expect(lines).toContain('no cgroup v2 hierarchy');
    expect(lines).toContain('/tmp: tmpfs of 1024 MiB');
  });
});

describe('I/O faults', () => {
  it('finds ENOSPC, EDQUOT, EIO and EROFS in an error, its cause or its message; nothing else', () => {
    expect(ioFaultCode(Object.assign(new Error('write'), { code: 'ENOSPC' }))).toBe('ENOSPC');
    expect(ioFaultCode(new Error('wrap', { cause: Object.assign(new Error('x'), { code: 'EDQUOT' }) }))).toBe('EDQUOT');
    expect(ioFaultCode(new Error('git commit failed: fatal: unable to write new index file: No space left on device'))).toBe('ENOSPC');
    expect(ioFaultCode(Object.assign(new Error('nope'), { code: 'ENOENT' }))).toBeNull();
    expect(ioFaultCode('plain')).toBeNull();
  });

  it('gives the mount point and free space of a path, or of its nearest existing ancestor', () => {
    const d = diskInfo('/proc/self/no/such/dir');
    expect(d?.mountPoint).toBe('/proc');
    expect(diskInfo('/')!.totalBytes).toBeGreaterThan(0);
  });
});
