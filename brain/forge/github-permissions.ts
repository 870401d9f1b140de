/**
 * Who may steer Polly on GitHub (issue 26, used by issue 30 too): only accounts with write,
 * maintain or admin permission on the repository, asked of GitHub's collaborator permission
 * endpoint (https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user:
 * `permission` is admin, write, read or none; maintain reads as write, triage as read) and cached
 * per login, and the logins of config `forge.github.trusted_authors`. `author_association` is a
 * hint only (journaled, never the answer). One cache serves the PR watcher and the issue watcher.
 */
import type { PullWatchClient } from './github-watch.js';

/** Permissions on the repository that may steer a worker or answer the plan gate (GitHub's `permission`: maintain reads as `write`). */
export const STEERING_PERMISSIONS: ReadonlySet<string> = new Set(['admin', 'write']);
/** How long a login's permission is trusted before it is asked again, ms (10 min). */
export const PERMISSION_TTL_MS = 10 * 60 * 1000;

/** A login's standing: `permission` is GitHub's answer, `config` (trusted_authors), `none` (no such account) or `unknown` (the lookup failed). */
export interface Trust {
  trusted: boolean;
  permission: string;
  /** Whether answering sent a request (false: from the cache or the config). */
  requested: boolean;
}

/** The permission check one repository's watchers share. */
export interface PermissionCheck {
  /**
   * Whether `login` may steer Polly: listed in `trustedAuthors`, or write/maintain/admin per GitHub
   * (cached `ttlMs`; 404, an account GitHub does not know, is `none`). A lookup that fails is
   * `unknown`: untrusted now and not cached, so the caller asks again on its next pass.
   */
  trustOf(login: string | null | undefined): Promise<Trust>;
}

export interface PermissionCheckOptions {
  /** Logins (accounts or apps, e.g. `renovate[bot]`) trusted without a lookup (config `forge.github.trusted_authors`). */
  trustedAuthors?: readonly string[];
  /** How long an answer is kept, ms (default {@link PERMISSION_TTL_MS}). */
  ttlMs?: number;
  now?: () => Date;
}

/** Create the check for `owner/repo` on `client` (see the module comment). */
export function createPermissionCheck(deps: { client: PullWatchClient; owner: string; repo: string }, options: PermissionCheckOptions = {}): PermissionCheck {
  const trusted = new Set(options.trustedAuthors ?? []);
  const ttl = options.ttlMs ?? PERMISSION_TTL_MS;
  const now = () => (options.now ? options.now() : new Date()).getTime();
  const cache = new Map<string, { permission: string; at: number }>();
  return {
    async trustOf(login) {
      if (!login) return { trusted: false, permission: 'none', requested: false };
      if (trusted.has(login)) return { trusted: true, permission: 'config', requested: false };
      const at = now();
      const cached = cache.get(login);
      if (cached && at - cached.at < ttl) return { trusted: STEERING_PERMISSIONS.has(cached.permission), permission: cached.permission, requested: false };
      try {
        const r = await deps.client.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', { owner: deps.owner, repo: deps.repo, username: login });
        const permission = String((r.data as { permission?: unknown }).permission ?? 'none');
        cache.set(login, { permission, at });
        return { trusted: STEERING_PERMISSIONS.has(permission), permission, requested: true };
      } catch (error) {
        if ((error as { status?: number }).status === 404) {
          cache.set(login, { permission: 'none', at });
          return { trusted: false, permission: 'none', requested: true };
        }
        return { trusted: false, permission: 'unknown', requested: true };
      }
    },
  };
}
