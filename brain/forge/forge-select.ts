/**
 * Which forge a repository uses: GitHub when `forge.kind` says so, or (`auto`, the default) when
 * `origin` is a GitHub URL (github.com, or the host of `forge.github.base_url` for GitHub
 * Enterprise); otherwise the local forge.
 */
import { PollyError } from '../core/errors.js';
import type { PollyConfig } from '../config/config-schema.js';
import type { Forge } from './forge.js';
import { createGitHubClient } from './github-client.js';
import { createGitHubForge, parseGitHubRemote } from './github-forge.js';
import { createGitHubPullWatcher, type PullRequestWatcher } from './github-watch.js';
import { resolveGitHubToken } from './github-token.js';
import { createLocalForge, type LocalForgeStore } from './local-forge.js';
import { createPermissionCheck } from './github-permissions.js';
import { createGitHubIssueTracker } from './github-issues.js';
import type { IssueTracker } from './issue-tracker.js';
import { createLocalIssueTracker } from './local-issues.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';

export type ForgeSelection = { kind: 'local'; reason: string } | { kind: 'github'; reason: string; owner: string; repo: string; baseUrl: string; host: string };

/** The GitHub host and API root for a `forge.github.base_url` (null: github.com). */
export function githubEndpoint(baseUrl: string | null): { host: string; baseUrl: string } {
  if (!baseUrl) return { host: 'github.com', baseUrl: 'https://api.github.com' };
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch (error) {
    throw new PollyError('config_invalid', `forge.github.base_url ${JSON.stringify(baseUrl)} is not a URL. Use e.g. https://github.example.com/api/v3.`, { cause: error });
  }
  return { host: url.host, baseUrl: baseUrl.replace(/\/+$/, '') };
}

/**
 * Decide the forge from the config and the `origin` URL (null when there is no origin). Pure.
 * @throws PollyError `config_invalid` when `forge.kind: github` but origin is not a GitHub URL.
 */
export function selectForge(forge: PollyConfig['forge'], originUrl: string | null): ForgeSelection {
  const endpoint = githubEndpoint(forge.github.base_url);
  const parsed = originUrl ? parseGitHubRemote(originUrl, endpoint.host) : null;
  if (forge.kind === 'local') return { kind: 'local', reason: 'forge.kind is local' };
  if (parsed) {
    return { kind: 'github', reason: forge.kind === 'github' ? 'forge.kind is github' : `origin is on ${endpoint.host}`, ...parsed, ...endpoint };
  }
  if (forge.kind === 'github') {
    throw new PollyError(
      'config_invalid',
      `forge.kind is github but origin (${originUrl ?? 'none'}) is not a ${endpoint.host} repository URL. Set forge.kind to auto or local, or point origin at GitHub.`,
      { details: { origin: originUrl } },
    );
  }
  return { kind: 'local', reason: originUrl ? `origin (${originUrl}) is not on ${endpoint.host}` : 'no origin remote' };
}

/** `git remote get-url origin`, or null when there is no such remote. */
export async function originUrl(git: GitRunner, repoRoot: string, remote = 'origin'): Promise<string | null> {
  const r = await git.run(['remote', 'get-url', remote], { cwd: repoRoot, okExitCodes: [2, 128] });
  return r.exitCode === 0 ? firstLine(r) || null : null;
}

export interface OpenForgeOptions {
  repoRoot: string;
  config: PollyConfig;
  store: LocalForgeStore;
  env?: NodeJS.ProcessEnv;
  git?: GitRunner;
}

/**
 * Build the repository's forge, its issue tracker (`issue-tracker.ts`: GitHub's issues, or the
 * local forge's), and for GitHub its PR watcher (`github-watch.ts`; the local forge watches itself
 * on every read). For GitHub the token comes from `GITHUB_TOKEN` or `gh auth token`, and the
 * forge, the watcher and the tracker share one Octokit client (`github-client.ts`), so its
 * throttling queue and rate-limit waits cover all of Polly's requests, and one permission cache
 * (`github-permissions.ts`).
 * @throws PollyError `config_invalid` (see {@link selectForge}), `forge_failed` (no token).
 */
export async function openForge(options: OpenForgeOptions): Promise<{ forge: Forge; selection: ForgeSelection; watcher: PullRequestWatcher | null; issues: IssueTracker }> {
  const git = options.git ?? createGitRunner();
  const selection = selectForge(options.config.forge, await originUrl(git, options.repoRoot));
  if (selection.kind === 'local') {
    return {
      forge: createLocalForge({ repoRoot: options.repoRoot, store: options.store, git }),
      selection,
      watcher: null,
      issues: createLocalIssueTracker({ store: options.store }),
    };
  }
  const { token } = await resolveGitHubToken({ env: options.env ?? process.env, hostname: selection.host });
  const client = createGitHubClient({ token, baseUrl: selection.baseUrl });
  const forge = createGitHubForge({ owner: selection.owner, repo: selection.repo, octokit: client });
  const permissions = createPermissionCheck({ client, owner: selection.owner, repo: selection.repo }, { trustedAuthors: options.config.forge.github.trusted_authors ?? [] });
  const watcher = createGitHubPullWatcher({ store: options.store, client, owner: selection.owner, repo: selection.repo }, { permissions });
  const issues = createGitHubIssueTracker({ client, owner: selection.owner, repo: selection.repo, permissions });
  return { forge, selection, watcher, issues };
}
