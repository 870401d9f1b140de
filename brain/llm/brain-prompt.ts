/**
 * The LLM brain's system prompt and its skills (`brain/skills/<name>/SKILL.md`, Claude Code's
 * skill format: YAML front matter with `name` and `description`, then Markdown instructions).
 *
 * The prompt is appended to Claude Code's own (`--append-system-prompt`), which keeps the
 * "Working directory: …" line and the tool instructions. It holds no `key=value` tokens, so the
 * scripted model server matches sessions on the first user message alone.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PollyError } from '../core/errors.js';
import { brainSkillsDir } from '../core/install-paths.js';

/** The Brain's skills, in the order the prompt lists them. */
export const BRAIN_SKILLS = ['investigate', 'fanout', 'cross-review'] as const;
export type BrainSkillName = (typeof BRAIN_SKILLS)[number];

/** A skill as shipped: its name, its front matter description and the file. */
export interface BrainSkill {
  name: BrainSkillName;
  description: string;
  /** Absolute path of the SKILL.md. */
  path: string;
  /** The whole file (front matter and body). */
  text: string;
}

/**
 * Read the front matter of a SKILL.md: `name` and `description` (single-line values).
 * @throws PollyError `internal` when the file has no front matter or lacks either field.
 */
export function parseSkillFrontMatter(text: string, source: string): { name: string; description: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n/.exec(text);
  if (!m) throw new PollyError('internal', `${source} has no YAML front matter (--- name/description ---); reinstall Polly.`);
  const fields: Record<string, string> = {};
  for (const line of (m[1] as string).split(/\r?\n/)) {
    const kv = /^([a-z-]+):\s*(.*)$/.exec(line);
    if (kv) fields[kv[1] as string] = (kv[2] as string).trim();
  }
  if (!fields.name || !fields.description) throw new PollyError('internal', `${source}: the front matter needs name and description; reinstall Polly.`);
  return { name: fields.name, description: fields.description };
}

/**
 * Load the three shipped skills.
 * @throws PollyError `not_built` when a SKILL.md is missing from the package; `internal` for a bad front matter.
 */
export function loadBrainSkills(dir: string = brainSkillsDir()): BrainSkill[] {
  return BRAIN_SKILLS.map((name) => {
    const path = join(dir, name, 'SKILL.md');
    if (!existsSync(path)) throw new PollyError('not_built', `the Brain's skill ${name} is missing (${path}); reinstall Polly (the package ships brain/llm/skills/).`);
    const text = readFileSync(path, 'utf8');
    const fm = parseSkillFrontMatter(text, path);
    if (fm.name !== name) throw new PollyError('internal', `${path}: front matter name is ${JSON.stringify(fm.name)}, expected ${JSON.stringify(name)}`);
    return { name, description: fm.description, path, text };
  });
}

/**
 * The Brain's system prompt (appended to Claude Code's): its role, its tools, the rules Polly
 * enforces, and the skills with their descriptions.
 * @param options.maxDispatches  `policies.spawn_bounds.max_dispatches_per_turn`
 */
export function brainSystemPrompt(options: { skills: ReadonlyArray<Pick<BrainSkill, 'name' | 'description'>>; maxDispatches: number }): string {
  return [
    '# You are the Brain of Polly',
    '',
    "Polly is a git-native orchestrator for coding agents. You turn a human's goal into verified, reviewed pull requests by directing worker agents. " +
      'Your job is to DECOMPOSE the goal, DISPATCH workers, VERIFY their results, and INTEGRATE them into a coherent outcome the human can merge.',
    '',
    '## Rules (Polly enforces them; a denied call tells you why)',
    '- You never write business code. You may read anything, run read-only commands, and write only docs, skills and plans under .polly/plans/. Every change to source is a task for a worker.',
    '- Implementation happens only through a plan: propose it with plan_propose. Polly model-checks it; a refused plan comes back with the violated invariants and the shortest counterexample: revise and propose again. An admitted plan waits for a human to approve it; nothing is implemented before that.',
    '- A reviewer is always of another vendor than the worker (claude-code, codex, pi are three vendors).',
    `- At most ${options.maxDispatches} dispatches per turn.`,
    '- Polly never merges and never force-pushes. A human merges.',
    '',
    '## Your tools (the polly MCP server)',
    '- polly_status: the registry (goals, plans, tasks, workers). Start here.',
    '- sys_session_send: dispatch a read-only worker (purpose explore, search or review) to answer a question; implement work only goes through an approved plan.',
    '- plan_propose: propose the plan for the goal (tasks with worker, reviewer of another vendor, prompt, acceptance commands, depends_on, and paths: the globs of the files each task may change, from your investigation). Pass the goal id from your first message.',
    '- sys_read_inbox: results from workers, reviews, PRs and the plan gate. It blocks until an event arrives: wait with it, never poll in a loop.',
    '- sys_cancel_task: stop a task that goes nowhere; its work is kept in a backup ref.',
    '',
    '## How you work',
    '1. Investigate (skill investigate): read the code, dispatch explore/search workers for wide questions.',
    '2. Fan out (skill fanout): small independent tasks with acceptance commands; propose the plan; revise when refused.',
    '3. Wait for approval and results with sys_read_inbox, or end your turn: Polly wakes you with a new message when events arrive.',
    "4. Verify (skill cross-review): trust checks and cross-vendor reviews, not a worker's claims. Report to the human what is done and what is left.",
    '',
    'Keep each turn short and end it with a one-paragraph status for the human.',
    '',
    '## Skills (load one with the Skill tool when its description fits)',
    ...options.skills.map((s) => `- ${s.name}: ${s.description}`),
  ].join('\n');
}
