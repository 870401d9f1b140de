/**
 * `git push` (and the plumbing pushes): force in every spelling, mirror/delete/prune/all/tags, and
 * refspecs (`+src:dst`, `:dst`, `HEAD` = the task's branch) checked against the task's own branch
 * and the default branch. Source: git-scm.com/docs/git-push (OPTIONS, "<refspec>..."). Pure.
 */
import { UNKNOWN } from '../paths.js';
import type { Analyzer } from '../types.js';
import { PUSH } from './git-flag-specs.js';
import { has, parseArgs } from './git-options.js';
import { deny, refName } from './git-refs.js';

/** Analyse `git push <args>`: every push is a change; denials name the rule that fired. */
export function analyzePush(args: string[], a: Analyzer): void {
  a.mutate('git push');
  const ctx = a.context;
  const p = parseArgs(args, PUSH);
  if (p.unresolved !== null) return deny(a, 'blast_radius.unresolved_command', `git push option ${JSON.stringify(p.unresolved.replace(/\u0000/g, '…'))} is produced at run time`);
  const unknownLong = p.unknown.find((x) => x.startsWith('--'));
  if (unknownLong !== undefined) return deny(a, 'blast_radius.unresolved_command', `unknown git push option ${JSON.stringify(unknownLong)}`);
  const spelled = `git push ${args.join(' ')}`;
  if (has(p, 'force', 'force-with-lease', 'force-if-includes'))
    return deny(a, 'blast_radius.force_push', `${spelled} forces the update and rewrites remote history; push without force (rebase or merge first)`);
  if (has(p, 'mirror')) return deny(a, 'blast_radius.force_push', `${spelled} mirrors every ref, overwriting and deleting remote branches`);
  if (has(p, 'delete')) return deny(a, 'blast_radius.delete_remote_branch', `${spelled} deletes a remote branch`);
  if (has(p, 'prune')) return deny(a, 'blast_radius.delete_remote_branch', `${spelled} deletes remote branches that have no local counterpart`);
  if (has(p, 'all', 'branches')) return deny(a, 'blast_radius.push_default_branch', `${spelled} pushes every branch, including ${ctx.defaultBranch}`);
  if (has(p, 'tags')) return deny(a, 'blast_radius.push_other_branch', `${spelled} pushes every tag; a worker pushes only its own branch ${ctx.branch}`);
  const positionals = [...p.positionals, ...(p.afterDashDash ?? [])];
  const unresolved = positionals.find((x) => x.includes(UNKNOWN));
  if (unresolved !== undefined)
    return deny(
      a,
      'blast_radius.unresolved_command',
      `${spelled}: ${JSON.stringify(unresolved.replace(/\u0000/g, '…'))} is produced at run time; push a literal remote and branch`,
    );
  const refspecs = positionals.slice(1);
  if (refspecs.length === 0 && ctx.branch === ctx.defaultBranch) {
    return deny(a, 'blast_radius.push_default_branch', `${spelled} pushes the current branch, which is the default branch ${ctx.defaultBranch}`);
  }
  for (const spec of refspecs) {
    if (spec.startsWith('+')) return deny(a, 'blast_radius.force_push', `refspec ${JSON.stringify(spec)} starts with + and forces the update`);
    if (spec.startsWith('^')) continue;
    const colon = spec.indexOf(':');
    const src = colon < 0 ? spec : spec.slice(0, colon);
    let dst = colon < 0 ? spec : spec.slice(colon + 1);
    if (colon >= 0 && src === '')
      return deny(a, 'blast_radius.delete_remote_branch', `refspec ${JSON.stringify(spec)} has an empty source and deletes the remote branch ${refName(dst)}`);
    if (colon < 0 && (src === 'HEAD' || src === '@')) dst = ctx.branch;
    if (colon >= 0 && dst === '') dst = src === 'HEAD' || src === '@' ? ctx.branch : src;
    const name = dst === 'HEAD' ? ctx.defaultBranch : refName(dst);
    if (name === ctx.defaultBranch || (name.includes('*') && !dst.startsWith('refs/tags/'))) {
      return deny(
        a,
        'blast_radius.push_default_branch',
        `refspec ${JSON.stringify(spec)} pushes to the default branch ${ctx.defaultBranch}: nothing is pushed there; push ${ctx.branch} and open a PR`,
      );
    }
    if (name !== ctx.branch || (dst.startsWith('refs/') && !dst.startsWith('refs/heads/'))) {
      return deny(
        a,
        'blast_radius.push_other_branch',
        `refspec ${JSON.stringify(spec)} pushes to ${dst}, not this task's branch ${ctx.branch}: a worker pushes only its own branch`,
      );
    }
  }
  if (a.policy.blast_radius.gate_pushes) {
    a.finding({ decision: 'ask', rule: 'blast_radius.gate_pushes', reason: `${spelled}: every push needs approval (blast_radius.gate_pushes: true)` });
  }
}
