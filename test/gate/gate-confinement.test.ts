/**
 * The gate as the layer that explains: forge writes as an allowlist (every gh write and
 * every write-method HTTP call to a forge API, in any spelling or flag order), inline interpreter
 * code as a change for read-only roles, git's own exec paths analysed as shell, and the idioms that
 * were wrongly denied. A table through the real `decide` with the seed policies; every denial has
 * allowed neighbours, so a rule that denies everything fails here.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../brain/config/config-schema.js';
import { decide } from '../../gate/decide.js';
import { forgeApiHostsFromBaseUrl } from '../../gate/shell/forge-http.js';
import type { GateContext, GateRole } from '../../gate/types.js';

interface Row {
  id: string;
  input: string;
  expect: 'allow' | 'deny';
  rule?: string;
  role: GateRole;
  cwd?: string;
}

const context: GateContext = {
  repoRoot: '/srv/proj',
  worktree: '/srv/proj/.worktrees/t1',
  branch: 'polly/t1',
  defaultBranch: 'main',
  home: '/home/dev',
  forgeApiHosts: ['git.corp.example'],
};
const WT = context.worktree;

const D = (id: string, input: string, rule: string, role: GateRole = 'implement', cwd?: string): Row => ({ id, input, expect: 'deny', rule, role, ...(cwd ? { cwd } : {}) });
const A = (id: string, input: string, role: GateRole = 'implement', cwd?: string): Row => ({ id, input, expect: 'allow', role, ...(cwd ? { cwd } : {}) });

const MERGE = 'blast_radius.merge';
const FORGE = 'blast_radius.forge_write';
const RO = 'purpose_guard.read_only';
const UNRES = 'blast_radius.unresolved_command';

const rows: Row[] = [
  // 1. gh: forge writes in every spelling and flag order
  D('gh-R-after-group', 'gh pr -R o/r merge 12', MERGE),
  D('gh-R-before-group', 'gh -R o/r pr merge', MERGE),
  D('gh-repo-eq', 'gh --repo=o/r pr merge 12 --squash', MERGE),
  D('gh-R-stuck', 'gh -Ro/r pr merge 12', MERGE),
  D('gh-GH_REPO', 'GH_REPO=o/r gh pr merge 12', MERGE),
  D('gh-env-GH_REPO', 'env GH_REPO=o/r gh pr merge 12', MERGE),
  D('gh-api-X-PUT', 'gh api -X PUT repos/o/r/pulls/1/merge', MERGE),
  D('gh-api-XPUT-stuck', 'gh api -XPUT repos/o/r/pulls/1/merge', MERGE),
  D('gh-api-method-eq', 'gh api --method=PATCH repos/o/r/pulls/1 -f state=closed', FORGE),
  D('gh-api-method-sep', 'gh api --method DELETE repos/o/r/issues/comments/9', FORGE),
  D('gh-api-X-eq', 'gh api -X=POST repos/o/r/issues/1/comments -f body=hi', FORGE),
  D('gh-api-field-implies-post', 'gh api repos/o/r/issues/1/comments -f body=hi', FORGE),
  D('gh-api-F-implies-post', 'gh api repos/o/r/pulls -F title=x -F head=polly/t1 -F base=main', FORGE),
  D('gh-api-long-field', 'gh api repos/o/r/issues --field title=x', FORGE),
  D('gh-api-raw-field-eq', 'gh api repos/o/r/issues --raw-field=title=x', FORGE),
  D('gh-api-input', 'gh api repos/o/r/pulls --input body.json', FORGE),
  D('gh-api-bundled', 'gh api -iX POST repos/o/r/issues', FORGE),
  D('gh-api-graphql-mutation', 'gh api graphql -f query=\'mutation { addComment(input:{subjectId:"X",body:"hi"}) { clientMutationId } }\'', FORGE),
  D('gh-api-graphql-merge', 'gh api graphql -f query=\'mutation { mergePullRequest(input:{pullRequestId:"X"}) { clientMutationId } }\'', MERGE),
  D('gh-api-graphql-file', 'gh api graphql -F query=@q.graphql', UNRES),
  D('gh-api-refs', 'gh api -X PATCH repos/o/r/git/refs/heads/main -f sha=abc', 'blast_radius.force_push'),
  D('gh-api-merges-endpoint', 'gh api repos/o/r/merges -f base=main -f head=polly/t1', MERGE),
  D('gh-api-unknown-flag', 'gh api --frobnicate repos/o/r', UNRES),
  D('gh-api-method-var', 'gh api -X "$M" repos/o/r/pulls/1', UNRES),
  D('gh-alias-set', "gh alias set m 'pr merge'", UNRES),
  D('gh-alias-use', 'gh m 12', UNRES),
  D('gh-extension-install', 'gh extension install owner/gh-merge', UNRES),
  D('gh-pr-create', 'gh pr create --fill', FORGE),
  D('gh-pr-comment', 'gh pr comment 12 --body hi', FORGE),
  D('gh-pr-review', 'gh pr review 12 --approve', FORGE),
  D('gh-pr-edit', 'gh pr edit 12 --add-label x', FORGE),
  D('gh-pr-ready', 'gh pr ready 12', FORGE),
  D('gh-pr-close', 'gh pr close 12', FORGE),
  D('gh-pr-checkout', 'gh pr checkout 12', FORGE),
  D('gh-issue-create', 'gh issue create -t x -b y', FORGE),
  D('gh-release-create', 'gh release create v1', FORGE),
  D('gh-workflow-run', 'gh workflow run ci.yml', FORGE),
  D('gh-run-rerun', 'gh run rerun 123', FORGE),
  D('gh-repo-delete', 'gh repo delete o/r --yes', FORGE),
  D('gh-secret-set', 'gh secret set TOKEN -b x', FORGE),
  D('gh-auth-token', 'gh auth token', 'blast_radius.credentials'),
  D('gh-flag-hides-sub', 'gh pr --web view merge 12', UNRES),
  D('gh-sh-c', "sh -c 'gh pr -R o/r merge 12'", MERGE),
  D('gh-abs-path', '/usr/bin/gh pr merge 12', MERGE),
  D('gh-sub-var', 'gh pr "$X" 12', UNRES),
  A('gh-ok-view-R', 'gh pr -R o/r view 12'),
  A('gh-ok-R-first', 'gh -R o/r pr view 12 --json title'),
  A('gh-ok-api-get', 'gh api repos/o/r/pulls/12'),
  A('gh-ok-api-X-GET', 'gh api -X GET search/issues -f q=repo:o/r'),
  A('gh-ok-api-graphql-query', 'gh api graphql -f query=\'query { repository(owner:"o", name:"r") { pullRequest(number: 1) { title } } }\''),
  A('gh-ok-api-graphql-anon', "gh api graphql -f query='{ viewer { login } }'"),
  A('gh-ok-checks', 'gh pr checks 12'),
  A('gh-ok-run-view', 'gh run view 123 --log-failed'),
  A('gh-ok-issue-list', 'gh issue list --label bug'),
  A('gh-ok-review-view', 'gh pr view 12 --comments', 'review'),
  A('gh-ok-review-api', 'gh api repos/o/r/pulls/12/files --paginate', 'review'),
  D('gh-review-run-download', 'gh run download 123', RO, 'review'),
  A('gh-ok-repo-clone-inside', 'gh repo clone o/r vendor/r'),
  D('gh-repo-clone-outside', 'gh repo clone o/r /srv/proj/r', 'blast_radius.outside_worktree'),
  D('gh-repo-clone-into-git', 'gh repo clone o/r .git/modules/r', 'blast_radius.protected_path'),

  D('hub-push-f', 'hub push -f origin polly/t1', 'blast_radius.force_push'),
  D('hub-reset-hard', 'hub reset --hard', 'blast_radius.reset_hard'),
  D('hub-pull-request', 'hub pull-request -m x', FORGE),
  D('hub-api-post', 'hub api repos/o/r/issues -F title=x', FORGE),
  D('hub-issue-create', 'hub issue create -m x', FORGE),
  D('hub-merge', 'hub merge https://github.com/o/r/pull/1', MERGE),
  D('glab-mr-merge', 'glab mr merge 12', MERGE),
  D('glab-mr-create', 'glab mr create --fill', FORGE),
  D('glab-api-post', 'glab api projects/1/issues -X POST -f title=x', FORGE),
  A('hub-ok-status', 'hub status'),
  A('hub-ok-ci-status', 'hub ci-status'),
  A('hub-ok-pr-list', 'hub pr list'),
  A('glab-ok-mr-view', 'glab mr view 12'),
  A('glab-ok-api-get', 'glab api projects/1/merge_requests'),

  // 1b. HTTP clients writing to a forge API (the sandbox's network is what really stops them)
  D('curl-post-comment', 'curl -X POST -H "Authorization: token $GH_TOKEN" https://api.github.com/repos/o/r/issues/1/comments -d \'{"body":"x"}\'', FORGE),
  D('curl-data-implies-post', 'curl https://api.github.com/repos/o/r/pulls -d \'{"title":"x"}\'', FORGE),
  D('curl-stuck-X', 'curl -sXPATCH https://api.github.com/repos/o/r/pulls/1', FORGE),
  D('curl-request-eq', 'curl --request=DELETE https://api.github.com/repos/o/r/git/refs/heads/x', FORGE),
  D('curl-no-scheme', 'curl -X PUT api.github.com/repos/o/r/contents/a.txt -d @body.json', FORGE),
  D('curl-ghe-server', 'curl -X POST https://github.corp.example/api/v3/repos/o/r/issues -d x', FORGE),
  D('curl-ghe-graphql', 'curl https://github.corp.example/api/graphql -d \'{"query":"mutation { x }"}\'', FORGE),
  D('curl-ghe-cloud', 'curl -X POST https://api.acme.ghe.com/repos/o/r/issues -d x', FORGE),
  D('curl-config-host', 'curl -X POST https://git.corp.example/repos/o/r/issues -d x', FORGE),
  D('wget-post', 'wget --post-data=\'{"body":"x"}\' https://api.github.com/repos/o/r/issues/1/comments', FORGE),
  D('wget-method', 'wget --method=DELETE https://api.github.com/repos/o/r/issues/comments/9', FORGE),
  D('httpie-method', 'http POST https://api.github.com/repos/o/r/issues title=x', FORGE),
  D('httpie-items', 'http api.github.com/repos/o/r/issues title=x', FORGE),
  D('xh-patch', 'xh PATCH https://api.github.com/repos/o/r/pulls/1 state=closed', FORGE),
  D('curl-merge', 'curl -X PUT https://api.github.com/repos/o/r/pulls/1/merge', MERGE),
  A('curl-ok-get', 'curl -s https://api.github.com/repos/o/r/pulls/1 | jq .title'),
  A('curl-ok-G', 'curl -G https://api.github.com/search/issues -d q=repo:o/r'),
  A('curl-ok-head', 'curl -I https://api.github.com'),
  A('curl-ok-local-post', 'curl -X POST http://localhost:3000/api/items -d x'),
  A('curl-ok-other-host-post', 'curl -X POST https://httpbin.org/post -d x'),
  A('httpie-ok-get', 'http https://api.github.com/repos/o/r per_page==5'),

  // 2. read-only roles: any inline interpreter code is a change
  D('ro-node-e', "node -e \"require('fs').readFileSync(require('os').homedir()+'/.ssh/id_rsa')\"", RO, 'review'),
  D('ro-node-p', 'node -p "process.env"', RO, 'review'),
  D('ro-node-eval-eq', 'node --eval="1"', RO, 'explore'),
  D('ro-node-print', 'node --print 1', RO, 'search'),
  D('ro-node-pe', 'node -pe 1', RO, 'review'),
  D('ro-python-c', "python3 -c 'print(1)'", RO, 'review'),
  D('ro-python-bundled', "python3 -Ic 'print(1)'", RO, 'review'),
  D('ro-perl-e', "perl -ne 'print if /x/' a.txt", RO, 'review'),
  D('ro-ruby-e', "ruby -e 'puts 1'", RO, 'explore'),
  D('ro-php-r', "php -r 'echo 1;'", RO, 'review'),
  D('ro-deno-eval', "deno eval 'console.log(1)'", RO, 'review'),
  D('ro-bash-c', "bash -c 'cat a.txt'", RO, 'review'),
  D('ro-sh-c', "sh -c 'ls'", RO, 'search'),
  D('ro-bash-lc', "bash -lc 'git log'", RO, 'review'),
  D('ro-xargs-sh-c', "ls | xargs -I{} sh -c 'cat {}'", RO, 'review'),
  D('ro-find-exec-sh', "find . -name '*.ts' -exec sh -c 'wc -l \"$1\"' _ {} \\;", RO, 'review'),
  D('ro-heredoc-python', "python3 <<'EOF'\nprint(1)\nEOF", RO, 'review'),
  D('ro-heredoc-python-dash', "python3 - <<'EOF'\nprint(1)\nEOF", RO, 'explore'),
  D('ro-heredoc-bash', "bash <<'EOF'\nls\nEOF", RO, 'review'),
  D('ro-herestring-node', "node <<< 'console.log(1)'", RO, 'review'),
  D('ro-eval', "eval 'ls'", RO, 'review'),
  D('ro-env-S', "env -S 'cat a'", RO, 'review'),
  D('ro-awk-system', 'awk \'BEGIN { system("id") }\'', 'blast_radius.interpreter', 'review'),
  D('ro-awk-redirect', 'awk \'{ print > "out.txt" }\' a.txt', RO, 'review'),
  D('ro-git-bang-alias', "git -c alias.l='!cat a' l", RO, 'review'),
  A('ro-ok-awk-print', "awk '{print $1}' a.txt", 'review'),
  A('ro-ok-sed-n', "sed -n '1,20p' a.txt", 'review'),
  A('ro-ok-jq', 'jq .name package.json', 'review'),
  A('ro-ok-grep', 'grep -rn "exec(" src', 'review'),
  A('impl-ok-node-e', 'node -e "console.log(1)"'),
  A('impl-ok-bash-c', "bash -c 'npm test'"),
  A('impl-ok-heredoc-python', "python3 <<'EOF'\nprint(1)\nEOF"),
  A('brain-ok-node-p', 'node -p "1+1"', 'brain'),

  // 3. git's own exec paths, analysed as shell
  D('git-rebase-exec', "git rebase --exec 'git push -f origin polly/t1' HEAD~3", 'blast_radius.force_push'),
  D('git-rebase-x', "git rebase -x 'git update-ref refs/heads/main HEAD' origin/main", 'blast_radius.default_branch'),
  D('git-rebase-x-stuck', "git rebase -x'rm -rf ~' HEAD~1", 'blast_radius.rm'),
  D('git-rebase-exec-eq', "git rebase --exec='git push origin HEAD:main' HEAD~1", 'blast_radius.push_default_branch'),
  D('git-bisect-run', 'git bisect run git push -f origin polly/t1', 'blast_radius.force_push'),
  D('git-bisect-run-sh', "git bisect run sh -c 'git branch -f main HEAD'", 'blast_radius.default_branch'),
  D('git-submodule-foreach', "git submodule foreach 'git reset --hard'", 'blast_radius.reset_hard'),
  D('git-submodule-foreach-other-repo', "git submodule foreach --recursive 'git commit -am x'", 'blast_radius.other_repository'),
  D('git-difftool-x', "git difftool -x 'rm -rf /' HEAD~1", 'blast_radius.rm'),
  D('git-difftool-extcmd', "git difftool --extcmd='git push -f' HEAD~1", 'blast_radius.force_push'),
  D('git-grep-O', "git grep -O'git push -f' foo", 'blast_radius.force_push'),
  D('git-c-sshcommand', 'git -c core.sshCommand=\'sh -c "cat ~/.ssh/id_rsa"\' fetch origin', 'blast_radius.git_config'),
  D('git-c-sshcommand-read', 'git -c core.sshCommand=/tmp/x ls-remote origin', 'blast_radius.git_config'),
  D('git-c-bang-alias', "git -c alias.x='!git push -f' x", 'blast_radius.force_push'),
  D('git-filter-branch', "git filter-branch --tree-filter 'rm -f a' HEAD", 'blast_radius.history'),
  D('git-config-hookspath', 'git config core.hooksPath /tmp/h', 'blast_radius.git_config'),
  D('git-editor-program', 'GIT_EDITOR=\'sh -c "git push -f"\' git commit --amend', 'blast_radius.git_config'),
  D('git-c-editor-program', 'git -c core.editor=/tmp/evil.sh commit --amend', 'blast_radius.git_config'),
  D('git-sequence-editor-program', "GIT_SEQUENCE_EDITOR='sed -i s/pick/drop/' git rebase -i HEAD~3", 'blast_radius.git_config'),
  A('git-ok-rebase-x-tests', "git rebase -x 'npm test' origin/main"),
  A('git-ok-bisect-run-tests', 'git bisect run npm test'),
  A('git-ok-difftool-x-diff', "git difftool -x 'diff -u' HEAD~1"),

  // 4. idioms that were wrongly denied, and the limits of what makes them pass
  A('ok-editor-true-rebase', 'GIT_EDITOR=true git rebase --continue'),
  A('ok-c-editor-true', 'git -c core.editor=true rebase --continue'),
  A('ok-sequence-editor-colon', 'GIT_SEQUENCE_EDITOR=: git rebase -i origin/main'),
  A('ok-pager-cat', 'GIT_PAGER=cat git log -3'),
  A('ok-push-show-current', 'git push origin "$(git branch --show-current)"'),
  A('ok-push-abbrev-ref', 'git push -u origin "$(git rev-parse --abbrev-ref HEAD)"'),
  A('ok-push-backticks', 'git push origin `git branch --show-current`'),
  A('ok-cd-toplevel-commit', 'cd "$(git rev-parse --show-toplevel)" && git commit -am x'),
  A('ok-node-options-memory', 'NODE_OPTIONS=--max-old-space-size=4096 npm run build'),
  A('ok-export-node-options', 'export NODE_OPTIONS="--experimental-vm-modules --no-warnings" && npx jest'),
  A('ok-env-list', 'env | sort', 'explore'),
  D('push-show-current-after-checkout', 'git checkout -b other && git push origin "$(git branch --show-current)"', UNRES),
  D('push-show-current-outside', 'cd /srv/other && git push origin "$(git branch --show-current)"', UNRES),
  D('editor-var-program', 'EDITOR=\'sh -c "git push -f"\' git commit --amend', 'blast_radius.git_config'),
  D('export-git-editor', "export GIT_EDITOR='sh -c x' && git commit --amend", 'blast_radius.git_config'),
  A('ok-export-git-editor-true', 'export GIT_EDITOR=true && git rebase --continue'),
  D('cd-toplevel-outside', 'cd /srv/proj && cd "$(git rev-parse --show-toplevel)" && git commit -am x', 'blast_radius.other_repository'),
  D('push-other-subst', 'git push origin "$(git rev-parse --abbrev-ref main@{upstream})"', UNRES),
  D('node-options-require', 'NODE_OPTIONS="--require /tmp/evil.js" npm test', 'blast_radius.git_config'),
  D('node-options-mixed', 'NODE_OPTIONS="--max-old-space-size=4096 -r /tmp/evil.js" npm test', 'blast_radius.git_config'),
  D('export-node-options-import', 'export NODE_OPTIONS=--import=/tmp/evil.mjs', 'blast_radius.git_config'),
  D('editor-var-value', 'GIT_EDITOR="$E" git commit --amend', 'blast_radius.git_config'),
];

describe('forge API hosts from config', () => {
  it('takes the host of forge.github.base_url, and nothing from null or a bad URL', () => {
    expect(forgeApiHostsFromBaseUrl('https://GitHub.Corp.Example/api/v3')).toEqual(['github.corp.example']);
    expect(forgeApiHostsFromBaseUrl(null)).toEqual([]);
    expect(forgeApiHostsFromBaseUrl('not a url')).toEqual([]);
    const ctx = { ...context, forgeApiHosts: forgeApiHostsFromBaseUrl('https://ghe.internal:8443/api/v3') };
    const post = decide(
      { type: 'tool', tool: 'bash', input: 'curl -X POST https://ghe.internal:8443/repos/o/r/issues -d x', cwd: WT, role: 'implement' },
      DEFAULT_CONFIG.policies,
      ctx,
    );
    expect(post.rule).toBe('blast_radius.forge_write');
    const without = decide(
      { type: 'tool', tool: 'bash', input: 'curl -X POST https://ghe.internal:8443/repos/o/r/issues -d x', cwd: WT, role: 'implement' },
      DEFAULT_CONFIG.policies,
      { ...context, forgeApiHosts: [] },
    );
    expect(without.decision).toBe('allow');
  });
});

describe('gate confinement table (issue 13)', () => {
  it.each(rows.map((r) => [r.id, r] as const))('%s', (_id, r) => {
    const d = decide({ type: 'tool', tool: 'bash', input: r.input, cwd: r.cwd ?? WT, role: r.role }, DEFAULT_CONFIG.policies, context);
    expect({ id: r.id, decision: d.decision, rule: r.rule ? d.rule : undefined }).toEqual({ id: r.id, decision: r.expect, rule: r.rule });
    expect(d.reason.length).toBeGreaterThan(10);
  });
});
