/**
 * `polly init [--json]`: set up Polly in the git repository containing the working directory.
 *
 * Creates (each only if absent): `.polly/config.yaml` (every default, commented; its
 * `acceptance.commands` and `worktrees.setup` fitted to the project found in the repository by
 * `detectProject`, and a first line pointing the YAML language server at `config.schema.json` beside it),
 * `.polly/config.schema.json` (a copy of the JSON Schema this Polly ships, `schemas/config.schema.json`:
 * committed with the config, it stays valid on every clone and machine, which a path into this
 * install would not; a later run refreshes it when the installed schema changed), `.polly/.gitignore`
 * (keeps runtime state out of git, so config.yaml can be committed), `.polly/registry.json` (empty,
 * with a `polly.initialized` journal entry); adds `.worktrees/` to the repository's
 * `info/exclude` once (in the common git dir, so it works from a linked worktree too); writes the
 * `.worktrees/` exclusion into the config of each test runner that would collect the worktrees
 * (brain/config/tool-exclusions-write.ts; `--no-exclusions` only advises).
 * Idempotent: a second run changes nothing and says so. An existing config or registry is
 * validated, never overwritten.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile, appendFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { programsHiddenBySandbox, programsMissingFromPath } from './doctor.js';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { writeToolExclusions, type WrittenExclusion } from '../config/tool-exclusions-write.js';
import { CONFIG_RELATIVE_PATH, loadConfig, renderDefaultConfig } from '../config/config.js';
import { detectProject, LOCKFILES, type GitFileView, type ProjectDetection } from '../config/project-detection.js';
import { createGitRunner } from '../../workers/git/git.js';
import { resolveWorktreesDir, worktreesDirInRepo } from '../../workers/git/worktrees-dir.js';
import { schemaPath } from '../core/install-paths.js';
import { findRepo } from '../../workers/git/repo.js';
import { createFileRegistryStore } from '../registry/registry-store.js';

/** The line `polly init` adds to `info/exclude`. */
export const WORKTREES_EXCLUDE_LINE = '.worktrees/';

/** `.polly/.gitignore`: runtime state stays out of git; config.yaml is meant to be committed. */
export const POLLY_GITIGNORE = [
  '# Polly runtime state (written by "polly init"). Commit config.yaml; not these.',
  'registry.json',
  'registry.json.*',
  'journal.jsonl',
  'archive.jsonl',
  'runs/',
  '*.lock',
  '*.tmp',
  'brain.log',
  'gate-decisions.jsonl',
  'brain/',
  'workers/',
  'logs/',
  'guard/',
  'notify-cursor',
  'base-checks/',
  'progress/',
  'scripted-model.json',
  '',
].join('\n');

export interface InitResult {
  /** True when this run set something up; false when everything was already in place. */
  initialized: boolean;
  /** Paths created by this run, relative to repoRoot when inside it. */
  created: string[];
  /** Existing files this run changed (the exclude file, the schema copy refreshed). */
  updated: string[];
  repoRoot: string;
  pollyDir: string;
  /** The project found and the commands written; null when config.yaml existed (nothing written). */
  detected: ProjectDetection | null;
  /**
   * Tools that would crawl `.worktrees/` and what init did: the exclusion written into their
   * config, or (`advised`) what to add by hand (brain/config/tool-exclusions-write.ts).
   */
  toolExclusions: WrittenExclusion[];
}

/**
 * `.polly/config.schema.json`: the config's JSON Schema, copied from this Polly's
 * `schemas/config.schema.json` (brain/config/json-schemas.ts). The config names it relatively
 * (`$schema=config.schema.json`, resolved beside the YAML file by the YAML language server:
 * https://github.com/redhat-developer/yaml-language-server#using-inlined-schema), so the committed
 * pair works on every clone, unlike a path into the install (`node_modules/polly/…`, a clone's path).
 */
export const CONFIG_SCHEMA_RELATIVE_PATH = join('.polly', 'config.schema.json');

/** Where the config's first line says the schema came from (a comment under it). */
const SCHEMA_NOTE = `the schema is ${basename(CONFIG_SCHEMA_RELATIVE_PATH)} beside this file, Polly's schemas/config.schema.json copied by "polly init" (run it again after updating Polly to refresh it)`;

/**
 * The first steps after `polly init`, as printed under "Next:" and, the same lines, in the
 * README's "Your own repository in five minutes" block (test/brain/commands/init-command.test.ts holds them equal).
 */
export const FIRST_STEPS: readonly string[] = [
  'git add .polly && git commit -m "Polly config"   # add too any file init said it changed (e.g. package.json); review .polly/config.yaml',
  '                                     # first (acceptance.commands: the checks Polly runs); a clone needs it, worktrees do not',
  "git push origin HEAD                 # tasks start from origin's branch: an unpushed commit would ride along in every PR (Polly warns)",
  'polly doctor                         # config, agent CLIs, model keys, root, sandbox, git identity, branch, test runner, .polly/ in git, uncommitted work',
  'polly goal "add a --json flag to the export command"',
  '#   → the Brain investigates and proposes a plan; an admitted plan waits at the plan gate:',
  'polly plan show p1                   # the tasks, the admission line, counterexamples if refused',
  'polly plan approve p1                # or: reject. An ask expires after 24 h and counts as rejected',
];

/** What detection looks at (brain/config/project-detection.ts), for the line that says nothing was found. */
const DETECTED_FILES =
  'package.json with a test script, Python project files, requirements*.txt or test_*.py, go.mod, Cargo.toml, Gemfile, gradlew/build.gradle, pom.xml, *.sln/*.csproj, mix.exs, composer.json, deno.json, Package.swift, pubspec.yaml, build.zig, a Makefile test or check target, a justfile test recipe';

/** The stderr lines that say what `polly init` detected and wrote. */
export function describeDetection(d: ProjectDetection): string[] {
  if (d.acceptanceCommands.length === 0) {
    const found = d.ecosystems.map((e) => `polly init: detected ${e.kind} (${e.evidence.join(', ')})${e.notes.map((n) => `; ${n}`).join('')}`);
    return [
      ...found,
      `polly init: no test command detected (looked for ${DETECTED_FILES}): acceptance.commands is [], so Polly runs no checks of its own and each plan task must name its commands. ` +
        'Set the command that runs your tests in .polly/config.yaml, e.g. acceptance: {commands: ["./run-tests.sh"]}; every command must exit 0 for a task to be green.',
    ];
  }
  const lines = d.ecosystems.map((e) => `polly init: detected ${e.kind} (${e.evidence.join(', ')})${e.notes.map((n) => `; ${n}`).join('')}`);
  lines.push(
    `polly init: acceptance.commands: ${JSON.stringify(d.acceptanceCommands)}; worktrees.setup: ${JSON.stringify(d.setup)}${d.setup !== null ? ' (worktrees.setup_network: true, so it can fetch packages inside the sandbox)' : ''}`,
  );
  return lines;
}

/**
 * Git's view of the lockfiles present in `root` ({@link GitFileView}): each one `git ls-files`
 * does not list is untracked, and `git check-ignore -v` (https://git-scm.com/docs/git-check-ignore:
 * `<source>:<line>:<pattern>\t<path>`, exit 1 when not ignored) says which rule ignores it.
 */
export async function gitFileView(root: string, env: NodeJS.ProcessEnv): Promise<GitFileView> {
  const present = LOCKFILES.filter((f) => existsSync(join(root, f)));
  const untracked = new Map<string, string>();
  if (present.length === 0) return { untracked };
  const git = createGitRunner({ baseEnv: env });
  const tracked = new Set((await git.run(['ls-files', '-z', '--', ...present], { cwd: root })).stdout.split('\0').filter(Boolean));
  for (const f of present) {
    if (tracked.has(f)) continue;
    const r = await git.run(['check-ignore', '-v', '--', f], { cwd: root, okExitCodes: [1] });
    const rule = r.exitCode === 0 ? r.stdout.split('\t')[0]?.trim() : '';
    untracked.set(f, rule ? `ignored by git (${rule})` : 'not tracked by git');
  }
  return { untracked };
}

/** True when `text` (an exclude or ignore file) already ignores the top-level `.worktrees` directory. */
export function excludesWorktrees(text: string): boolean {
  return text.split(/\r?\n/).some((l) => ['.worktrees/', '/.worktrees/', '.worktrees', '/.worktrees', '.worktrees/*', '/.worktrees/*'].includes(l.trim()));
}

/**
 * Initialise Polly in the repository containing `cwd` (see the module comment).
 * @throws PollyError `not_a_git_repo` outside a repository; `config_invalid` or
 *         `registry_corrupt` when an existing file is damaged (it is left as it is).
 */
export async function initRepository(cwd: string, env: NodeJS.ProcessEnv, options: { writeExclusions?: boolean } = {}): Promise<InitResult> {
  const repo = await findRepo(cwd, env);
  const show = (p: string): string => {
    const rel = relative(repo.root, p);
    return rel.startsWith('..') || isAbsolute(rel) ? p : rel;
  };
  const created: string[] = [];
  const updated: string[] = [];

  if (!existsSync(repo.pollyDir)) {
    await mkdir(repo.pollyDir, { recursive: true });
    created.push(`${show(repo.pollyDir)}/`);
  }

  const configPath = join(repo.root, CONFIG_RELATIVE_PATH);
  let detected: ProjectDetection | null = null;
  if (!existsSync(configPath)) {
    detected = detectProject(repo.root, env, await gitFileView(repo.root, env));
    // A detected setup installs dependencies (npm ci, uv sync, …): inside the sandbox it needs the
    // network, which setup commands do not get by default.
    const text = renderDefaultConfig({
      acceptanceCommands: detected.acceptanceCommands,
      setup: detected.setup,
      setupNetwork: detected.setup !== null,
      schemaRef: basename(CONFIG_SCHEMA_RELATIVE_PATH),
      schemaNote: SCHEMA_NOTE,
    });
    await writeFile(configPath, text, { flag: 'wx' });
    created.push(show(configPath));
  } else {
    await loadConfig(repo.root); // validate: a damaged config is reported, not replaced
  }

  // The schema copy: written when absent, refreshed when this Polly's schema differs (it is Polly's file, not the user's).
  const schemaCopy = join(repo.root, CONFIG_SCHEMA_RELATIVE_PATH);
  const shipped = readFileSync(schemaPath('config.schema.json'), 'utf8');
  let copied: string | null = null;
  try {
    copied = await readFile(schemaCopy, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (copied !== shipped) {
    await writeFile(schemaCopy, shipped);
    (copied === null ? created : updated).push(show(schemaCopy));
  }

  const ignorePath = join(repo.pollyDir, '.gitignore');
  if (!existsSync(ignorePath)) {
    await writeFile(ignorePath, POLLY_GITIGNORE, { flag: 'wx' });
    created.push(show(ignorePath));
  }

  const store = createFileRegistryStore(repo.pollyDir);
  if (!existsSync(store.paths.registry)) {
    await store.update((_draft, tx) => tx.emit('polly.initialized', { repoRoot: repo.root }));
    created.push(show(store.paths.registry), show(store.paths.journal));
  } else {
    await store.read(); // validate: a corrupt registry is reported with its backup, never reset
  }

  const excludePath = join(repo.gitCommonDir, 'info', 'exclude');
  let exclude = '';
  try {
    exclude = await readFile(excludePath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (!excludesWorktrees(exclude)) {
    const existed = existsSync(excludePath);
    await mkdir(dirname(excludePath), { recursive: true });
    const sep = exclude === '' || exclude.endsWith('\n') ? '' : '\n';
    await appendFile(excludePath, `${sep}# Polly: worker worktrees\n${WORKTREES_EXCLUDE_LINE}\n`);
    (existed ? updated : created).push(show(excludePath));
  }

  // Only for the default worktrees directory inside the repository: one outside is crawled by nothing.
  const config = await loadConfig(repo.root);
  const inRepo = worktreesDirInRepo(repo.root, resolveWorktreesDir(repo.root, config.worktrees.dir));
  const toolExclusions = options.writeExclusions === false || inRepo === null ? [] : writeToolExclusions(repo.root, inRepo);
  for (const t of toolExclusions) if (t.action !== 'advised') (t.action === 'created' ? created : updated).push(t.file);
  return { initialized: created.length + updated.length > 0, created, updated, repoRoot: repo.root, pollyDir: repo.pollyDir, detected, toolExclusions };
}

export const command: Command = {
  summary: 'set up Polly in this git repository (.polly/config.yaml)',
  usage: `Usage: polly init [--json]

Set up Polly in the git repository containing the current directory:
  .polly/config.yaml   every setting with its default and a comment (edit it, commit it)
  .polly/config.schema.json  its JSON Schema, for editors (commit it; refreshed by a later run)
  .polly/.gitignore    keeps the registry and journal out of git
  .polly/registry.json Polly's state (empty), and .polly/journal.jsonl
  .git/info/exclude    gains ".worktrees/" (worker worktrees live in .worktrees/<id>)
Running it again changes nothing. Existing files are validated, never overwritten.

Options:
  --json            print {initialized, created, updated, repoRoot, pollyDir, detected, toolExclusions}
  --no-exclusions   do not edit the test runners' configs; only say what to add

The config's acceptance.commands and worktrees.setup fit the project found at the
repository's top level (package.json and its lockfile; Python project files, requirements*.txt
or test_*.py modules; go.mod; Cargo.toml; Gemfile; Gradle; Maven; .NET; mix.exs; composer.json;
deno.json; Package.swift; pubspec.yaml; build.zig; a Makefile test/check target; a justfile
test recipe); what was detected, or that nothing was, goes to stderr.
Test runners that would also collect the worktrees in .worktrees/ get the exclusion written
into their config: vitest (test.exclude, or a new vitest.config.mts), jest
(testPathIgnorePatterns), a bare node --test script (its test files named by shell globs),
pytest (norecursedirs); what cannot be edited safely, and eslint, is said instead.

Exit codes: 0 ok; 2 not in a git repository, a bad flag or an invalid config.yaml;
1 a corrupt registry (the message says how to restore the backup).`,
  async run(argv, io) {
    const args = parseCommandArgs('init', argv, { json: { type: 'boolean' }, 'no-exclusions': { type: 'boolean' } }, 0);
    const result = await initRepository(io.cwd, io.env, { writeExclusions: !args.values['no-exclusions'] });
    if (result.detected) {
      for (const line of describeDetection(result.detected)) io.stderr.write(`${line}\n`);
      // A detected command whose program the sandbox hides (under HOME outside every toolchain dir it mounts) would exit 127 in every task: say so now, for its language.
      for (const h of programsHiddenBySandbox(result.repoRoot, result.detected.acceptanceCommands, io.env))
        io.stderr.write(`polly init: warning: "${h.command}" needs ${h.missing}; ${h.advice}\n`);
      // The detected toolchain itself missing here (go, cargo, python3, …): every check or setup would exit 127.
      const run = [...result.detected.acceptanceCommands, ...(result.detected.setup ? [result.detected.setup] : [])];
      for (const m of programsMissingFromPath(result.repoRoot, run, io.env))
        io.stderr.write(
          `polly init: warning: "${m.command}" needs ${m.program}, which is on no directory of PATH: install it (or put it on the PATH of the shell that runs polly) before polly run, or every task's ${m.command === result.detected.setup ? 'worktrees.setup' : 'checks'} exit 127 without running; polly doctor checks it again.\n`,
        );
    }
    // Worktrees live in .worktrees/ inside the repository: what was written to keep each crawling
    // tool out, or how to (diagnostics, so stderr; --json has it as toolExclusions).
    for (const t of result.toolExclusions)
      io.stderr.write(
        t.action === 'advised'
          ? `polly init: note: ${t.tool} (${t.file}) will also see the worker worktrees in .worktrees/: ${t.detail}\n`
          : `polly init: ${t.action === 'created' ? 'created' : 'wrote into'} ${t.file} so ${t.tool} skips the worker worktrees in .worktrees/: ${t.detail}\n`,
      );
    // Go and cargo do not look there: say so, so the user need not wonder.
    for (const e of result.detected?.ecosystems ?? []) {
      if (e.kind === 'go') io.stderr.write("polly init: note: go test ./... skips .worktrees/ (go's ./... ignores directories starting with . or _): nothing to exclude\n");
      if (e.kind === 'rust') io.stderr.write('polly init: note: cargo test builds only this package or workspace, never .worktrees/: nothing to exclude\n');
    }
    if (args.values.json) {
      writeJson(io.stdout, result);
      return 0;
    }
    if (!result.initialized) {
      writeLine(io.stdout, `Polly is already initialised in ${result.repoRoot} (nothing changed).`);
      return 0;
    }
    writeLine(io.stdout, `Initialised Polly in ${result.repoRoot}`);
    for (const p of result.created) writeLine(io.stdout, `  created ${p}`);
    for (const p of result.updated)
      writeLine(io.stdout, `  updated ${p} ${p.endsWith(basename(CONFIG_SCHEMA_RELATIVE_PATH)) ? "(this Polly's schema)" : `(+ ${WORKTREES_EXCLUDE_LINE})`}`);
    writeLine(io.stdout, 'Next:');
    for (const l of FIRST_STEPS) writeLine(io.stdout, `  ${l}`);
    return 0;
  },
};
