/**
 * The demo's sample project (scripts/demo/sample-project) as a fresh repository with a bare origin,
 * for the end-to-end tests: `<root>/stats` on `main`, one commit, pushed to `<root>/origin.git`.
 */
import { cpSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git } from './git-repo.js';
import { trackBrains } from './brain-cleanup.js';

export interface SampleProject {
  /** The temp dir holding both (real path). */
  root: string;
  /** The working repository, on `main`, tracking origin/main. */
  repo: string;
  /** The bare remote. */
  origin: string;
}

/**
 * Copy the sample project into a new temp dir named `<prefix>XXXXXX`, commit it and push it to a
 * bare origin; the repository is tracked for test/helpers/brain-cleanup.ts `stopTrackedBrains`.
 */
export function sampleProjectWithOrigin(prefix: string): SampleProject {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const repo = join(root, 'stats');
  const origin = join(root, 'origin.git');
  cpSync(join(process.cwd(), 'scripts/demo/sample-project'), repo, { recursive: true });
  git(root, ['init', '-q', '--bare', '-b', 'main', origin]);
  git(repo, ['init', '-q', '-b', 'main']);
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '-m', 'initial']);
  git(repo, ['remote', 'add', 'origin', origin]);
  git(repo, ['push', '-q', '-u', 'origin', 'main']);
  // A Brain started here is stopped by stopTrackedBrains (the e2e files' afterAll), if still running.
  trackBrains(repo);
  return { root, repo, origin };
}
