/**
 * Reading a test repository's Polly state as a user would find it on disk: `.polly/registry.json`
 * and `.polly/journal.jsonl` (one JSON entry a line, brain/registry/journal.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { join } from 'node:path';
import type { Registry } from '../../brain/registry/registry-schema.js';

/** The registry of the repository at `repo`. @throws when it is missing or not JSON. */
export function readRegistryFile(repo: string): Registry {
  return JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as Registry;
}

/** Every journal entry of the repository at `repo`, oldest first. @throws when the journal is missing. */
export function readJournalFile(repo: string): Array<{ seq: number; kind: string; data: Record<string, unknown> }> {
  return readFileSync(join(repo, '.polly/journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { seq: number; kind: string; data: Record<string, unknown> });
}

/** Set keys of the repository's `.polly/config.yaml` in place (comments kept), e.g. `[['brain', 'start_on_approve'], true]`. */
export function editConfig(repo: string, entries: Array<[string[], unknown]>): void {
  const file = join(repo, '.polly/config.yaml');
  const doc = parseDocument(readFileSync(file, 'utf8'));
  for (const [path, value] of entries) doc.setIn(path, value);
  writeFileSync(file, doc.toString());
}
