/**
 * Holes a newcomer found in the gate, as a table through the real `decide` with the seed policies,
 * in a worktree context like Polly's own (repo /srv/proj, worktree /srv/proj/.worktrees/t1):
 * 1. moving or switching to the default branch locally (worktrees share refs with the user's repo);
 * 2. git writes in a repository other than the worker's worktree (cd, -C, --git-dir, --work-tree, GIT_DIR=);
 * 3. pushes to any branch other than the task's own;
 * 4. writes into another repository's git dir or refs, temp dirs included.
 * Each hole also has allowed neighbours, so a rule that denies everything fails here.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../brain/config/config-schema.js';
import { decide } from '../../gate/decide.js';
import type { GateContext, GateRole, GateTool } from '../../gate/types.js';

interface Row {
  id: string;
  input: string;
  expect: 'allow' | 'deny';
  rule?: string;
  role: GateRole;
  tool: GateTool;
  cwd?: string;
}

const context: GateContext = {
  repoRoot: '/srv/proj',
  worktree: '/srv/proj/.worktrees/t1',
  branch: 'polly/t1',
  defaultBranch: 'main',
  home: '/home/dev',
};
const WT = '/srv/proj/.worktrees/t1';

const D = (id: string, input: string, rule: string, tool: GateTool = 'bash', cwd?: string): Row => ({
  id,
  input,
  expect: 'deny',
  rule,
  role: 'implement',
  tool,
  ...(cwd ? { cwd } : {}),
});
const A = (id: string, input: string, tool: GateTool = 'bash', cwd?: string): Row => ({ id, input, expect: 'allow', role: 'implement', tool, ...(cwd ? { cwd } : {}) });

const DEFAULT = 'blast_radius.default_branch';
const OTHER = 'blast_radius.other_repository';
const PUSH = 'blast_radius.push_other_branch';
const PROT = 'blast_radius.protected_path';

const rows: Row[] = [
  // 1. the default branch, moved or switched to locally
  D('1-update-ref-full', 'git update-ref refs/heads/main HEAD', DEFAULT),
  D('1-update-ref-short', 'git update-ref main HEAD', DEFAULT),
  D('1-update-ref-heads', 'git update-ref -m msg heads/main polly/t1', DEFAULT),
  D('1-update-ref-no-deref', 'git update-ref --no-deref refs/heads/main HEAD~1', DEFAULT),
  D('1-branch-f', 'git branch -f main HEAD', DEFAULT),
  D('1-branch-force', 'git branch --force main', DEFAULT),
  D('1-branch-force-prefix', 'git branch --forc main origin/main', DEFAULT),
  D('1-branch-create-main', 'git branch main', DEFAULT),
  D('1-branch-move-to-main', 'git branch -m polly/t1 main', DEFAULT),
  D('1-branch-delete-main', 'git branch -d main', DEFAULT),
  D('1-checkout-B', 'git checkout -B main', DEFAULT),
  D('1-checkout-B-start', 'git checkout -B main origin/main', DEFAULT),
  D('1-checkout-b', 'git checkout -b main', DEFAULT),
  D('1-checkout-main', 'git checkout main', DEFAULT),
  D('1-checkout-orphan', 'git checkout --orphan main', DEFAULT),
  D('1-switch-C', 'git switch -C main', DEFAULT),
  D('1-switch-force-create', 'git switch --force-create=main', DEFAULT),
  D('1-switch-main', 'git switch main', DEFAULT),
  D('1-fetch-dot', 'git fetch . HEAD:main', DEFAULT),
  D('1-fetch-origin', 'git fetch origin polly/t1:main', DEFAULT),
  D('1-fetch-origin-main', 'git fetch origin main:main', DEFAULT),
  D('1-fetch-plus-refs', 'git fetch origin +refs/heads/main:refs/heads/main', DEFAULT),
  D('1-pull-refspec', 'git pull origin polly/t1:main', DEFAULT),
  D('1-push-dot', 'git push . HEAD:main', 'blast_radius.push_default_branch'),
  D('1-symbolic-ref', 'git symbolic-ref HEAD refs/heads/main', DEFAULT),
  D('1-symbolic-ref-m', 'git symbolic-ref -m why HEAD refs/heads/main', DEFAULT),
  D('1-rebase-branch-arg', 'git rebase origin/main main', DEFAULT),
  D('1-worktree-add-B', 'git worktree add -B main /tmp/w', DEFAULT),
  D('1-worktree-add-main', 'git worktree add --force /tmp/w main', DEFAULT),
  D('1-symbolic-ref-main-as-link', 'git symbolic-ref refs/heads/main refs/heads/polly/t1', DEFAULT),
  A('1-ok-worktree-add-detach', 'git worktree add --detach /tmp/w main'),
  D('1-alias-update-ref', "git -c alias.u='update-ref refs/heads/main HEAD' u", DEFAULT),
  D('1-sh-c', "sh -c 'git branch -f main HEAD'", DEFAULT),
  A('1-ok-update-ref-own', 'git update-ref refs/heads/polly/t1 HEAD'),
  A('1-ok-branch-from-main', 'git branch polly/t1-fix main'),
  A('1-ok-checkout-b-own', 'git checkout -b polly/t1-fix origin/main'),
  A('1-ok-checkout-file-from-main', 'git checkout main -- src/a.ts'),
  A('1-ok-checkout-paths', 'git checkout -- main'),
  A('1-ok-fetch-origin', 'git fetch origin main'),
  A('1-ok-fetch-remote-tracking', 'git fetch origin main:refs/remotes/origin/main'),
  A('1-ok-rebase-onto-main', 'git rebase origin/main'),
  A('1-ok-switch-own', 'git switch polly/t1'),
  A('1-ok-symbolic-ref-read', 'git symbolic-ref HEAD'),
  A('1-ok-branch-list', 'git branch --list'),

  // 2. git writes in a repository other than the worker's worktree
  D('2-cd-merge', 'cd /srv/proj && git merge polly/t1', OTHER),
  D('2-cd-semicolon', 'cd /srv/proj; git commit -am x', OTHER),
  D('2-cd-relative', 'cd ../.. && git merge --ff-only polly/t1', OTHER),
  D('2-pushd', 'pushd /srv/proj && git merge polly/t1', OTHER),
  D('2-cd-unknown', 'cd "$REPO" && git merge polly/t1', OTHER),
  D('2-subshell-cd', '(cd /srv/proj && git merge polly/t1)', OTHER),
  D('2-dash-C', 'git -C /srv/proj merge --ff-only polly/t1', OTHER),
  D('2-dash-C-relative', 'git -C ../.. merge polly/t1', OTHER),
  D('2-dash-C-update-ref', 'git -C /srv/origin.git update-ref refs/heads/main HEAD', DEFAULT),
  D('2-dash-C-update-ref-other', 'git -C /srv/origin.git update-ref refs/heads/x HEAD', OTHER),
  D('2-git-dir', 'git --git-dir=/srv/origin.git update-ref refs/heads/main HEAD', DEFAULT),
  D('2-git-dir-other-ref', 'git --git-dir=/srv/origin.git update-ref refs/heads/x HEAD', OTHER),
  D('2-git-dir-sep', 'git --git-dir /srv/proj/.git commit -m x', OTHER),
  D('2-work-tree', 'git --work-tree=/srv/proj checkout main', DEFAULT),
  D('2-work-tree-other', 'git --work-tree=/srv/proj checkout polly/t1', OTHER),
  D('2-work-tree-commit', 'git --work-tree /srv/proj commit -am x', OTHER),
  D('2-GIT_DIR-prefix', 'GIT_DIR=/srv/origin.git git update-ref refs/heads/x HEAD', 'blast_radius.git_config'),
  D('2-GIT_WORK_TREE-prefix', 'GIT_WORK_TREE=/srv/proj git commit -am x', 'blast_radius.git_config'),
  D('2-env-GIT_DIR', 'env GIT_DIR=/srv/origin.git git update-ref refs/heads/x HEAD', 'blast_radius.git_config'),
  D('2-export-GIT_DIR', 'export GIT_DIR=/srv/origin.git; git update-ref refs/heads/x HEAD', 'blast_radius.git_config'),
  D('2-export-GIT_WORK_TREE', 'export GIT_WORK_TREE=/srv/proj && git commit -am x', 'blast_radius.git_config'),
  D('2-export-GIT_CONFIG', 'export GIT_CONFIG_GLOBAL=/tmp/evil && git commit -am x', 'blast_radius.git_config'),
  D('2-set-a-GIT_DIR', 'set -a; GIT_DIR=/srv/origin.git; git update-ref refs/heads/x HEAD', 'blast_radius.git_config'),
  A('2-ok-export-other', 'export FOO=1 && git commit -am x'),
  D('2-cwd-outside', 'git merge polly/t1', OTHER, 'bash', '/srv/proj'),
  D('2-cd-tmp-push', 'cd /tmp/other && git push origin polly/t1', OTHER),
  A('2-ok-read-elsewhere', 'git -C /srv/proj status && git -C /srv/proj log --oneline -3'),
  A('2-ok-cd-read', 'cd /srv/proj && git diff main..polly/t1 --stat && git show HEAD'),
  A('2-ok-cd-back', 'cd /srv/proj && git status; cd /srv/proj/.worktrees/t1 && git commit -am x'),
  A('2-ok-cd-sub', 'cd src && git add a.ts && git commit -m x'),
  A('2-ok-C-own', 'git -C /srv/proj/.worktrees/t1 commit -am x'),
  A('2-ok-clone-tmp', 'git clone https://example.com/x.git /tmp/x'),

  // 3. pushes to any branch other than the task's own
  D('3-push-head-other', 'git push origin HEAD:polly/other', PUSH),
  D('3-push-other', 'git push origin polly/t2', PUSH),
  D('3-push-tags', 'git push origin --tags', PUSH),
  D('3-push-tags-prefix', 'git push --tag origin', PUSH),
  D('3-push-all', 'git push origin --all', 'blast_radius.push_default_branch'),
  D('3-push-refs', 'git push origin refs/heads/x:refs/heads/y', PUSH),
  D('3-push-two', 'git push origin polly/t1 polly/t2', PUSH),
  D('3-push-tag-ref', 'git push origin refs/tags/v1', PUSH),
  D('3-push-notes', 'git push origin HEAD:refs/notes/commits', PUSH),
  D('3-push-u-other', 'git push -u origin polly/t1:feature', PUSH),
  A('3-ok-push-own', 'git push origin polly/t1'),
  A('3-ok-push-head', 'git push -u origin HEAD'),
  A('3-ok-push-head-own', 'git push origin HEAD:polly/t1'),
  A('3-ok-push-refs-own', 'git push origin refs/heads/polly/t1'),
  A('3-ok-push-refs-own-dst', 'git push origin HEAD:refs/heads/polly/t1'),
  A('3-ok-push-follow-tags', 'git push --follow-tags origin polly/t1'),
  A('3-ok-push-bare', 'git push'),

  // a program named for the other side of a transport runs locally for path remotes
  D('x-fetch-upload-pack', 'git fetch --upload-pack=\'sh -c "rm -rf ~"\' /srv/origin.git', 'blast_radius.git_config'),
  D('x-fetch-upload-prefix', 'git fetch --upl=/tmp/evil origin', 'blast_radius.git_config'),
  D('x-clone-u', 'git clone -u /tmp/evil /srv/origin.git /tmp/c', 'blast_radius.git_config'),
  D('x-push-receive-pack', 'git push --receive-pack=/tmp/evil origin polly/t1', 'blast_radius.git_config'),
  D('x-send-pack-receive-pack', 'git send-pack --receive-pack=/tmp/evil /srv/origin.git polly/t1', 'blast_radius.git_config'),
  D('x-push-exec', 'git push --exec=/tmp/evil origin polly/t1', 'blast_radius.git_config'),
  D('x-ls-remote-upload-pack', 'git ls-remote --upload-pack /tmp/evil origin', 'blast_radius.git_config'),
  A('x-ok-fetch-update-head-ok', 'git fetch -u origin polly/t1'),
  A('x-ok-fetch-unshallow', 'git fetch --unshallow origin'),

  // 4. writes into another repository's git dir or refs
  D('4-redirect-bare-ref', 'echo x > /tmp/other.git/refs/heads/main', PROT),
  D('4-redirect-bare-head', 'echo ref: refs/heads/x > /tmp/other.git/HEAD', PROT),
  D('4-redirect-packed-refs', 'printf x >> /tmp/other.git/packed-refs', PROT),
  D('4-cp-hook', 'cp evil.sh /tmp/other.git/hooks/pre-receive', PROT),
  D('4-tee-config', 'echo x | tee /var/tmp/r.git/config', PROT),
  D('4-refs-heads-no-suffix', 'echo x > /tmp/bare/refs/heads/main', PROT),
  D('4-packed-refs-no-suffix', 'echo x > /tmp/bare/packed-refs', PROT),
  D('4-write-tool', '/tmp/other.git/refs/heads/main', PROT, 'write'),
  D('4-edit-tool', '/srv/origin.git/HEAD', PROT, 'edit'),
  D('4-mkdir-refs', 'mkdir -p /tmp/x/refs/heads/y', PROT),
  D('4-py-write', "python3 -c \"open('/tmp/o.git/refs/heads/main','w').write('x')\"", PROT),
  A('4-ok-tmp-file', 'echo x > /tmp/notes.txt'),
  A('4-ok-tmp-git-named-file', 'echo x > /tmp/foo.git'),
  A('4-ok-worktree-file', 'echo x > src/refs.ts'),
  A('4-ok-bare-clone', 'git clone --bare https://example.com/x.git /tmp/x.git'),
];

describe('gate holes', () => {
  it.each(rows.map((r) => [r.id, r] as const))('%s', (_id, r) => {
    const d = decide({ type: 'tool', tool: r.tool, input: r.input, cwd: r.cwd ?? WT, role: r.role }, DEFAULT_CONFIG.policies, context);
    expect({ id: r.id, decision: d.decision, rule: r.rule ? d.rule : undefined }).toEqual({ id: r.id, decision: r.expect, rule: r.rule });
    expect(d.reason.length).toBeGreaterThan(0);
  });

  it('keeps read-only roles on their own rule outside the worktree', () => {
    const d = decide({ type: 'tool', tool: 'bash', input: 'git -C /srv/proj fetch origin', cwd: WT, role: 'review' }, DEFAULT_CONFIG.policies, context);
    expect(d).toMatchObject({ decision: 'deny', rule: 'purpose_guard.read_only' });
  });
});
