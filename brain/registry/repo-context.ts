/**
 * What every repository command needs: the repository, its initialised `.polly/` store and its
 * config. One place for the "not initialised" error.
 */
import { existsSync } from 'node:fs';
import type { PollyConfig } from '../config/config-schema.js';
import { loadConfig } from '../config/config.js';
import { PollyError } from '../core/errors.js';
import { findRepo, type RepoLocation } from '../../workers/git/repo.js';
import { createFileRegistryStore, type FileRegistryStore } from './registry-store.js';

export interface RepoContext {
  repo: RepoLocation;
  store: FileRegistryStore;
  config: PollyConfig;
}

/**
 * Open the Polly state of the repository containing `cwd`.
 * @throws PollyError `not_a_git_repo`; `not_initialized` (run `polly init`); `config_invalid`.
 */
export async function openRepoContext(cwd: string, env: NodeJS.ProcessEnv): Promise<RepoContext> {
  const repo = await findRepo(cwd, env);
  if (!existsSync(repo.pollyDir)) {
    throw new PollyError('not_initialized', `Polly is not initialised in ${repo.root} (no .polly/ directory). Run "polly init" there first.`, {
      details: { repoRoot: repo.root },
    });
  }
  return { repo, store: createFileRegistryStore(repo.pollyDir), config: await loadConfig(repo.root) };
}
