// Admission verdicts kept between processes (workflows/check/admission-cache.ts): an unchanged
// workflow is not searched again, a changed one (or a changed checker) is, and a stored verdict
// that does not read back is a miss. Real files in a temp dir; the real polly-task workflow.
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { admissionKey, checkerFingerprint, createFileAdmissionCache, createMemoryAdmissionCache } from '../../../workflows/check/admission-cache.js';
import { checkWorkflow } from '../../../workflows/check/checker.js';
import { loadWorkflow } from '../../../workflows/load-workflow.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../../workflows/workflow-library.js';

const pollyTaskDir = () => builtinWorkflowDirs().find((d) => d.endsWith('polly-task'))!;

describe('admission cache', () => {
  it('stores each verdict once, reuses it, checks a changed workflow again, and treats an unreadable file as a miss', () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-admissions-'));
    const cache = createFileAdmissionCache(join(dir, 'admissions'));
    const first = createWorkflowLibrary(builtinWorkflowDirs(), { admissions: cache });
    const files = readdirSync(join(dir, 'admissions')).sort();
    expect(files).toHaveLength(2);
    const fresh = first.get('polly-task')!;
    expect(fresh.admitted).toBe(true);
    expect(fresh.check!.statesSeen).toBeGreaterThan(1000);

    // Reused, not searched: a mark put into the stored verdict comes back.
    const stored = join(dir, 'admissions', `${admissionKey(fresh.workflow!)}.json`);
    const record = JSON.parse(readFileSync(stored, 'utf8'));
    expect(record).toMatchObject({ key: admissionKey(fresh.workflow!), name: 'polly-task', admitted: true, line: fresh.line });
    writeFileSync(stored, JSON.stringify({ ...record, line: `${record.line} (from the cache)` }));
    const second = createWorkflowLibrary(builtinWorkflowDirs(), { admissions: cache });
    expect(second.get('polly-task')!.line).toBe(`${fresh.line} (from the cache)`);
    expect(second.get('polly-task')!.check).toMatchObject({ statesSeen: fresh.check!.statesSeen, pathsExplored: fresh.check!.pathsExplored });
    expect(readdirSync(join(dir, 'admissions')).sort()).toEqual(files);

    // A truncated verdict is a miss: checked again and stored whole.
    writeFileSync(stored, '{"key": "');
    expect(createWorkflowLibrary(builtinWorkflowDirs(), { admissions: cache }).get('polly-task')!.line).toBe(fresh.line);
    expect(JSON.parse(readFileSync(stored, 'utf8')).line).toBe(fresh.line);

    // A changed workflow is another key: checked (here refused: a bound raised past its domain), and kept beside.
    const copy = join(dir, 'changed');
    cpSync(pollyTaskDir(), copy, { recursive: true });
    const yaml = join(copy, 'workflow.yaml');
    const text = readFileSync(yaml, 'utf8');
    const edited = text.replace('when: "attempts < 2"', 'when: "attempts < 9"');
    expect(edited).not.toBe(text);
    writeFileSync(yaml, edited);
    const changed = createWorkflowLibrary([copy], { admissions: cache }).get('polly-task')!;
    expect(admissionKey(changed.workflow!)).not.toBe(admissionKey(fresh.workflow!));
    expect(changed.line).toBe(checkWorkflow(changed.workflow!).line);
    expect(readdirSync(join(dir, 'admissions'))).toHaveLength(3);
  }, 60_000);

  it('the key ignores where a workflow came from, and covers its content and the checker', () => {
    const wf = loadWorkflow(join(pollyTaskDir(), 'workflow.yaml'));
    expect(admissionKey({ ...wf, file: '/elsewhere/workflow.yaml', positions: {} })).toBe(admissionKey(wf));
    expect(admissionKey({ ...wf, initial: wf.states[1]! })).not.toBe(admissionKey(wf));
    expect(admissionKey(wf)).toMatch(/^[0-9a-f]{64}$/);
    expect(checkerFingerprint()).toMatch(/^[0-9a-f]{64}$/);
    const memory = createMemoryAdmissionCache();
    const lib = createWorkflowLibrary(builtinWorkflowDirs(), { admissions: memory });
    expect(memory.size).toBe(2);
    expect(memory.get(admissionKey(lib.get('customer-brief')!.workflow!))!.line).toBe(lib.get('customer-brief')!.line);
  }, 60_000);
});
