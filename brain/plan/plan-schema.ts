/**
 * The plan format: what the Brain proposes with `plan_propose` and what a human writes for
 * `polly run plan.yaml`. Validated with zod; errors name the field path (and file:line when the
 * plan came from a file).
 *
 * ```yaml
 * goal: Add a median() helper and fix sum()
 * tasks:
 *   - key: t1
 *     title: Fix sum() for negative numbers
 *     purpose: implement            # implement | review | explore | search
 *     worker: claude-code           # claude-code | codex | pi
 *     reviewer: codex               # another vendor: never the worker's
 *     prompt: Make test/sum.test.js pass without changing the test.
 *     acceptance:
 *       commands: [npm test]
 *       criteria: [sum() handles negative numbers]
 *     depends_on: []
 *     batch: 1                      # optional: dispatch in this turn, together with its batch
 *     budget: {usd: 0.5}            # optional: this task's hard budget (usd and/or tokens; null: none)
 *     paths: [src/sum.js, test/**]  # optional: the only files it may change (git globs; docs/plan-paths.md)
 *     stacked_on: t0                # optional: branch from t0's branch and target it (docs/landing-order.md)
 * budgets:                          # optional: over config budgets (brain/plan/budgets.ts)
 *   per_task: {tokens: 200000}
 *   per_goal: {usd: 5}
 * ```
 */
import { protectedPatternProblem } from '../../workers/git/protected-paths.js';
import { z } from 'zod';
import { parse as parseYaml, parseDocument, LineCounter } from 'yaml';
import { PollyError } from '../core/errors.js';
import type { PlanTaskSpec } from '../registry/registry-schema.js';
import type { Budget, PlanBudgets } from './budgets.js';
import { HARNESSES, PURPOSES } from '../core/vocabulary.js';

/** A task key: short, lowercase, usable in branch names (`polly/<plan>-<key>`). */
export const TASK_KEY_RE = /^[a-z0-9][a-z0-9-]{0,30}$/;

/** A base branch name a plan may give (a safe subset of git-check-ref-format(1)). */
export const BASE_BRANCH_RE = /^(?![-/.])(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<!\.lock)(?<![./])$/;

/** A budget (brain/plan/budgets.ts): USD and/or tokens; at least one. */
export const budgetSchema = z
  .object({
    usd: z.number().positive().nullable().optional(),
    tokens: z.number().int().min(1).nullable().optional(),
  })
  .strict()
  .refine((b) => typeof b.usd === 'number' || typeof b.tokens === 'number', 'a budget needs usd, tokens or both (write null for no limit)');

/**
 * A budget written as in a plan file (`{tokens: 400000, usd: 2}`, YAML 1.2 flow or JSON; `null`:
 * no limit), as `polly retry --budget` takes it. Validated by {@link budgetSchema}.
 * @param flag  how the user wrote it, for messages (`--budget`).
 * @throws PollyError `bad_input` naming the value, the problem and the spelling to use.
 */
export function parseBudgetText(text: string, flag: string): Budget | null {
  const fix = `Write it as a plan file does, e.g. ${flag} '{tokens: 400000}' or ${flag} '{usd: 2, tokens: 400000}' (null: no limit).`;
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new PollyError('bad_input', `${flag} ${JSON.stringify(text)} is not YAML: ${(error as Error).message.split('\n')[0]}. ${fix}`, {
      cause: error,
      details: { flag, value: text },
    });
  }
  const parsed = budgetSchema.nullable().safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length ? `${issue.path.join('.')}: ` : '';
    throw new PollyError('bad_input', `${flag} ${JSON.stringify(text)} is not a budget: ${at}${issue.message}. ${fix}`, { details: { flag, value: text } });
  }
  if (parsed.data === null) return null;
  const out: Budget = {};
  if (typeof parsed.data.usd === 'number') out.usd = parsed.data.usd;
  if (typeof parsed.data.tokens === 'number') out.tokens = parsed.data.tokens;
  return out;
}

/** One git glob of a plan's path contract (`paths`, `protected_paths`): relative, no `..`, no pathspec magic. */
const pathPattern = z.string().superRefine((p, ctx) => {
  const problem = protectedPatternProblem(p);
  if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${JSON.stringify(p)} is ${problem}` });
});

export const planTaskSchema = z
  .object({
    key: z.string().regex(TASK_KEY_RE, 'a task key is lowercase letters, digits and dashes (at most 31), e.g. "t1"'),
    title: z.string().min(1).max(200),
    purpose: z.enum(PURPOSES),
    worker: z.enum(HARNESSES),
    model: z.string().min(1).nullable().optional(),
    reviewer: z.enum(HARNESSES).nullable().optional(),
    prompt: z.string().min(1),
    acceptance: z
      .object({
        commands: z.array(z.string().min(1)).default([]),
        criteria: z.array(z.string().min(1)).default([]),
        /** Project checks this task is meant to make pass: red on the base, they do not stop it (docs/base-check.md). */
        known_red: z.array(z.string().min(1)).optional(),
      })
      .strict()
      .default({ commands: [], criteria: [] }),
    depends_on: z.array(z.string()).default([]),
    batch: z.number().int().min(1).max(1000).optional(),
    /**
     * The branch the task starts from and its PR targets (e.g. `release/1.x`); default: the
     * remote's default branch. Issue 16.
     */
    base: z.string().regex(BASE_BRANCH_RE, 'a base is a branch name such as "main" or "release/1.x" (letters, digits, ".", "_", "-", "/"; no "..", no leading "-")').optional(),
    /** This task's own hard budget (over the plan's and the config's per-task one); null: no limit. */
    budget: budgetSchema.nullable().optional(),
    /**
     * Protected paths (config `worktrees.protected_paths`: Polly's config, CI, hook managers…) this
     * task may change, as git globs; shown at the plan gate and flagged in the PR. Without them a
     * change there commits nothing (workers/git/protected-paths.ts).
     */
    protected_paths: z.array(pathPattern).optional(),
    /**
     * The paths this task may change, as git globs (`src/api/**`, `docs/guide.md`; the dialect of
     * workers/git/path-globs.ts). Staging refuses a change outside them (the worker is told once,
     * then the task parks), and two tasks whose paths overlap must be ordered by `depends_on`
     * (the checker refuses the plan otherwise). Absent: unbounded (the whole repository but the
     * protected paths), said at the plan gate. Protected paths still need `protected_paths`.
     */
    paths: z.array(pathPattern).min(1, 'paths needs at least one glob; leave it out for a task that may change any file').optional(),
    /**
     * A stacked task: the key of the implement task whose change this one needs. It branches from
     * that task's branch and its PR targets it; once that PR merges, Polly retargets this PR to
     * the parent's base and merges the base in (brain/forge/after-merge.ts, docs/landing-order.md).
     * Implies `depends_on` on it. Not with `base`.
     */
    stacked_on: z.string().regex(TASK_KEY_RE, 'stacked_on names a task key (lowercase letters, digits, "-")').optional(),
  })
  .strict();

export const planSchema = z
  .object({
    goal: z.string().optional(),
    tasks: z.array(planTaskSchema).min(1, 'a plan needs at least one task'),
    /** Hard budgets over the config's `budgets` (brain/plan/budgets.ts); null: no limit. */
    budgets: z.object({ per_task: budgetSchema.nullable().optional(), per_goal: budgetSchema.nullable().optional() }).strict().optional(),
  })
  .strict();

export type PlanInput = z.input<typeof planSchema>;
export type PlanTaskInput = z.output<typeof planTaskSchema>;

/** A validated plan: tasks in the registry's shape, plus optional dispatch batches. */
export interface Plan {
  goal: string | null;
  tasks: PlanTaskSpec[];
  /** Task key → the batch (turn) the plan pins it to, when it pins one. */
  batches: Record<string, number>;
  /** The plan's own budgets, as written (null when it sets none). */
  budgets: PlanBudgets | null;
}

function formatZodPath(path: ReadonlyArray<PropertyKey>): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

/**
 * Validate a plan object (from `plan_propose` or a parsed file).
 * @param source  where it came from, for messages (a file path or `plan_propose`).
 * @param locate  optional: field path → `file:line:column`.
 * @throws PollyError `plan_invalid` naming the field path, the problem and the fix.
 */
export function validatePlan(raw: unknown, source: string, locate?: (path: Array<string | number>) => string | null): Plan {
  const parsed = planSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = locate?.(issue.path as Array<string | number>) ?? source;
    throw new PollyError('plan_invalid', `${where}: ${formatZodPath(issue.path) || '(top level)'}: ${issue.message}. Fix the plan and propose it again.`, {
      details: { path: formatZodPath(issue.path), source },
    });
  }
  const plan = parsed.data;
  const keys = new Set<string>();
  const fail = (index: number, field: string, message: string): never => {
    const path = ['tasks', index, field];
    throw new PollyError('plan_invalid', `${locate?.(path) ?? source}: tasks[${index}].${field}: ${message}`, { details: { path: `tasks[${index}].${field}`, source } });
  };
  plan.tasks.forEach((t, i) => {
    if (keys.has(t.key)) fail(i, 'key', `duplicate task key "${t.key}"; every task needs its own key`);
    keys.add(t.key);
  });
  plan.tasks.forEach((t, i) => {
    for (const d of t.depends_on) {
      if (!keys.has(d)) fail(i, 'depends_on', `unknown task "${d}"; known: ${[...keys].join(', ')}`);
      if (d === t.key) fail(i, 'depends_on', `task "${t.key}" depends on itself`);
    }
    if (t.purpose === 'implement' && t.acceptance.commands.length === 0 && t.acceptance.criteria.length === 0) {
      // Commands may come from config defaults; criteria alone are allowed. Nothing at all is not.
      fail(i, 'acceptance', 'an implement task needs an acceptance contract: commands Polly runs, or criteria');
    }
    if (t.purpose !== 'implement' && t.paths !== undefined) fail(i, 'paths', `only an implement task changes files; a ${t.purpose} task changes none, so leave paths out`);
    if (t.stacked_on !== undefined) {
      const parent = plan.tasks.find((p) => p.key === t.stacked_on);
      if (!parent) fail(i, 'stacked_on', `unknown task "${t.stacked_on}"; known: ${[...keys].join(', ')}`);
      if (t.stacked_on === t.key) fail(i, 'stacked_on', `task "${t.key}" cannot be stacked on itself`);
      if (t.purpose !== 'implement' || parent!.purpose !== 'implement')
        fail(
          i,
          'stacked_on',
          `only an implement task can be stacked, and only on an implement task (a branch with a PR): "${t.key}" is ${t.purpose}, "${parent!.key}" is ${parent!.purpose}`,
        );
      if (t.base !== undefined) fail(i, 'stacked_on', `a stacked task's base is the branch of "${t.stacked_on}"; leave base out (or stacked_on, to start from ${t.base})`);
      // The task needs the parent's change: it runs after it, as with depends_on.
      if (!t.depends_on.includes(t.stacked_on!)) t.depends_on = [...t.depends_on, t.stacked_on!];
    }
  });
  const cycle = findCycle(plan.tasks);
  if (cycle) throw new PollyError('plan_invalid', `${source}: tasks depend on each other in a cycle: ${cycle.join(' → ')}. Break the cycle.`, { details: { cycle } });
  const batches: Record<string, number> = {};
  for (const t of plan.tasks) if (t.batch !== undefined) batches[t.key] = t.batch;
  return {
    goal: plan.goal ?? null,
    batches,
    budgets: plan.budgets ?? null,
    tasks: plan.tasks.map((t) => ({
      key: t.key,
      title: t.title,
      purpose: t.purpose,
      worker: t.worker,
      model: t.model ?? null,
      reviewer: t.reviewer ?? null,
      prompt: t.prompt,
      acceptance: {
        commands: t.acceptance.commands,
        criteria: t.acceptance.criteria,
        ...(t.acceptance.known_red !== undefined ? { knownRed: t.acceptance.known_red } : {}),
      },
      dependsOn: t.depends_on,
      ...(t.base !== undefined ? { base: t.base } : {}),
      ...(t.budget !== undefined ? { budget: t.budget } : {}),
      ...(t.protected_paths !== undefined && t.protected_paths.length > 0 ? { protectedPaths: t.protected_paths } : {}),
      ...(t.paths !== undefined ? { paths: t.paths } : {}),
      ...(t.stacked_on !== undefined ? { stackedOn: t.stacked_on } : {}),
    })),
  };
}

function findCycle(tasks: Array<{ key: string; depends_on: string[] }>): string[] | null {
  const deps = new Map(tasks.map((t) => [t.key, t.depends_on]));
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (k: string): string[] | null => {
    if (state.get(k) === 'done') return null;
    if (state.get(k) === 'visiting') return [...stack.slice(stack.indexOf(k)), k];
    state.set(k, 'visiting');
    stack.push(k);
    for (const d of deps.get(k) ?? []) {
      const c = visit(d);
      if (c) return c;
    }
    stack.pop();
    state.set(k, 'done');
    return null;
  };
  for (const t of tasks) {
    const c = visit(t.key);
    if (c) return c;
  }
  return null;
}

/**
 * Parse a plan file (YAML or JSON).
 * @throws PollyError `plan_invalid` with file:line:column of the offending field.
 */
export function parsePlanFile(text: string, file: string): Plan {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const pos = lineCounter.linePos(e.pos[0]);
    throw new PollyError('plan_invalid', `${file}:${pos.line}:${pos.col}: not valid YAML: ${e.message.split('\n')[0]}`, { details: { file, line: pos.line } });
  }
  const locate = (path: Array<string | number>): string | null => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) {
        const pos = lineCounter.linePos(node.range[0]);
        return `${file}:${pos.line}:${pos.col}`;
      }
    }
    return null;
  };
  return validatePlan(doc.toJS(), file, locate);
}
