// An acceptance check that cannot run (a program not found, exit 127: not installed, or hidden by the
// sandbox like a pyenv shim under HOME; an interpreter without the runner module: `No module named
// pytest`) fails the task at once, naming the command, what is missing and what to do: the agent's
// attempts are not spent on the environment. The real run_acceptance tool in a real worktree (in
// Polly's sandbox where bubblewrap works), then the real send_followup, which must not resume it.
// The interpreters are small scripts committed in the worktree that answer as python does (the
// machine's python may or may not have pytest); the signatures are checked on captured output.
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { COMMAND_NOT_FOUND, cannotRunReason, runAcceptanceTool } from '../../../brain/task-tools/run-acceptance.js';
import { classifyCannotRun, runnerProbe } from '../../../workers/check-runner.js';
import { sendFollowup } from '../../../brain/task-tools/send-followup.js';
import { createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';

describe('an acceptance command that is not found', () => {
  it('fails the task at once with the command, exit 127 and what to do; no feedback, the agent is not resumed', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    await createGreenTask(s, 'nf1', { 'a.txt': 'a\n' });
    await s.store.update((d) => {
      d.tasks.nf1!.acceptance.commands = ['true', 'polly-no-such-program -m pytest'];
      d.tasks.nf1!.sessionId = 'session-1';
    });
    const config = testConfig(null);
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config, agentEnv: {} });
    const before = (await s.store.read()).tasks.nf1!.attempts;
    const out = await tools.run(runAcceptanceTool, 'nf1', 'o-acc');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await s.store.read()).tasks.nf1!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toMatch(
      /^acceptance command "polly-no-such-program -m pytest" cannot run here: exit 127 \(.*polly-no-such-program.*not found\), the program "polly-no-such-program" is missing\. /,
    );
    expect(task.statusReason).toContain('no agent attempt was spent');
    expect(task.statusReason).toContain('Run polly doctor');
    expect(out.note).toBe(`run_acceptance: ${task.statusReason}`);
    expect(task.feedback).toBeNull();
    expect(task.attempts).toBe(before);
    expect(task.checks.map((c) => [c.command, c.exitCode])).toEqual([
      ['true', 0],
      ['polly-no-such-program -m pytest', COMMAND_NOT_FOUND],
    ]);
    const journal = readFileSync(join(s.repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal).toMatch(/"task\.checks".*"cannotRun":\{"kind":"not_found","missing":"the program \\"polly-no-such-program\\""\}/);
    // The workflow's TESTS_RED emits send_followup: a failed task is not resumed (noAgents throws if it were).
    const followup = await tools.run(sendFollowup, 'nf1', 'o-fix');
    expect(followup).toMatchObject({ outcome: 'failure', permanent: true });
    expect(followup.note).toContain('is failed');
  }, 60_000);

  it('an interpreter without the runner module fails the task; a module the task is to write goes back to the agent', async () => {
    // python's own line for `-m X` when X is not installed; `-c` answers the runner probe the same way.
    const fakePython = (missing: string, runOutput: string) => `#!/bin/sh\nif [ "$1" = "-c" ]; then echo "$0: No module named ${missing}" >&2; exit 1; fi\n${runOutput}\n`;
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const config = testConfig(null);
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config, agentEnv: {} });
    const cases = [
      // the newcomer's case: /usr/bin/python3 -m pytest → "No module named pytest", exit 1
      { id: 'pm1', script: fakePython('pytest', 'echo "$0: No module named pytest" >&2; exit 1'), module: 'pytest' },
      // red without a signature (a conftest import error), but the runner probe finds no pytest
      { id: 'pm2', script: fakePython('pytest', 'echo "ImportError while loading conftest"; exit 4'), module: 'pytest' },
      // the project's own module that the task is to write: the code's, back to the agent
      { id: 'pm3', script: fakePython('statskit', 'echo "$0: No module named statskit" >&2; exit 1'), module: 'statskit' },
    ];
    for (const c of cases) {
      const t = await createGreenTask(s, c.id, { 'tools/python3': c.script });
      chmodSync(join(t.worktree!, 'tools/python3'), 0o755);
      await s.store.update((d) => {
        d.tasks[c.id]!.acceptance.commands = [`tools/python3 -m ${c.module}`];
      });
      const out = await tools.run(runAcceptanceTool, c.id, `o-${c.id}`);
      expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    }
    const reg = await s.store.read();
    for (const id of ['pm1', 'pm2']) {
      const task = reg.tasks[id]!;
      expect(task.status, id).toBe('failed');
      expect(task.statusReason).toContain('the Python module pytest (for ');
      expect(task.statusReason).toContain('no agent attempt was spent');
      expect(task.statusReason).toContain('apt-get install python3-pytest');
      expect(task.feedback).toBeNull();
    }
    expect(reg.tasks.pm1!.statusReason).toMatch(/^acceptance command "tools\/python3 -m pytest" cannot run here: exit 1 \(\S*tools\/python3: No module named pytest\), /);
    expect(reg.tasks.pm2!.statusReason).toMatch(
      /^acceptance command "tools\/python3 -m pytest" cannot run here: exit 4 \(Polly's runner probe in the checks' sandbox: \S*tools\/python3: No module named pytest\), the Python module pytest/,
    );
    expect(reg.tasks.pm3!.status).toBe('fixing');
    expect(reg.tasks.pm3!.feedback).toContain('Fix the code so that they pass');
    const journal = readFileSync(join(s.repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal.split('\n').filter((l) => l.includes('"cannotRun":{"kind":"missing_module"'))).toHaveLength(2);
  }, 90_000);

  it('the signatures on captured output: make, node, bundler, cargo, 126; a red test run is not one', () => {
    const red = (command: string, exitCode: number, output: string, declared?: (m: string) => boolean) =>
      classifyCannotRun({ command, exitCode, timedOut: false, output }, declared);
    // GNU make 4.3, a recipe's program missing (captured)
    expect(red('make test', 2, 'polly-nosuch-runner -q\nmake: polly-nosuch-runner: No such file or directory\nmake: *** [Makefile:2: test] Error 127\n')).toMatchObject({
      kind: 'not_found',
      missing: 'the program "polly-nosuch-runner" (a recipe of make)',
    });
    // node 20: the runner's entry script not installed (captured), and a runner's own import
    const entry =
      "Error: Cannot find module '/r/node_modules/.bin/vitest'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n";
    expect(red('node node_modules/.bin/vitest run', 1, entry)).toMatchObject({ kind: 'missing_dependencies' });
    expect(red('npm test', 1, "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'vite' imported from /r/node_modules/vitest/dist/cli.js\n")).toMatchObject({
      kind: 'missing_dependencies',
      missing: 'the package vite (node_modules is not installed where the check runs)',
    });
    // … but a package the project's own code imports and nobody installed is the code's
    expect(red('node --test', 1, "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'lodash' imported from /r/src/stats.js\n")).toBeNull();
    expect(red('bundle exec rspec', 7, 'bundler: command not found: rspec\nInstall missing gem executables with `bundle install`\n')).toMatchObject({ missing: 'the gem rspec' });
    expect(red('cargo nextest run', 101, 'error: no such command: `nextest`\n')).toMatchObject({ missing: 'the cargo subcommand nextest' });
    expect(red('./run-tests.sh', 126, 'sh: 1: ./run-tests.sh: Permission denied\n')).toMatchObject({
      kind: 'not_executable',
      fix: expect.stringContaining('git update-index --chmod=+x ./run-tests.sh'),
    });
    // a virtualenv or node_modules of the main checkout is untracked: no worktree has it
    expect(red('.venv/bin/python -m pytest', 127, 'sh: 1: .venv/bin/python: not found\n')!.fix).toContain(
      '.venv/ is untracked, so a new worktree has none: create it in worktrees.setup',
    );
    expect(red('node_modules/.bin/vitest run', 127, 'sh: 1: node_modules/.bin/vitest: not found\n')!.fix).toContain('node_modules is untracked');
    // a virtualenv under /tmp: the sandbox's /tmp is private and empty, which is what is wrong (not a pyenv shim)
    const tmpVenv = red('/tmp/venv-x/bin/python -m pytest', 127, 'sh: 1: /tmp/venv-x/bin/python: not found\n')!;
    expect(tmpVenv.fix).toMatch(/^\/tmp\/venv-x\/bin\/python is under \/tmp, which Polly's sandbox replaces with a private, empty \/tmp for every command/);
    expect(tmpVenv.fix).toContain('/opt/venvs/NAME/bin/python');
    expect(tmpVenv.fix).not.toContain('pyenv');
    expect(red('/home/ann/.local/bin/tox', 127, 'sh: 1: /home/ann/.local/bin/tox: not found\n')!.fix).toMatch(/is under a home directory, which Polly's sandbox hides/);
    // a traceback's ModuleNotFoundError is the code's; a declared dependency's missing -m module is the environment's
    expect(red('python -m pytest', 1, "E   ModuleNotFoundError: No module named 'requests'\n")).toBeNull();
    expect(red('python3 -m statskit', 1, '/usr/bin/python3: No module named statskit\n')).toBeNull();
    expect(red('python3 -m statskit', 1, '/usr/bin/python3: No module named statskit\n', (m) => m === 'statskit')).toMatchObject({ kind: 'missing_module' });
    expect(red('npm test', 1, 'not ok 1 - sum\n  expected: 3\n  actual: -1\n')).toBeNull();
    expect(classifyCannotRun({ command: 'x', exitCode: null, timedOut: true, output: '' })).toBeNull();
    // the probe: a program by PATH, a relative one by its file, a python module by find_spec; none for a builtin
    expect(runnerProbe('CI=1 go test ./...')).toMatch(/^command -v 'go' /);
    expect(runnerProbe('./gradlew test')).toMatch(/^\[ -x '.\/gradlew' \]/);
    expect(runnerProbe('/usr/bin/python3 -m pytest -q')).toContain('importlib.util.find_spec');
    expect(runnerProbe('true')).toBeNull();
  });

  it("says where to look: HOME hidden by the sandbox when confined, the PATH when not; quotes the shell's line", () => {
    const result = { command: 'python -m pytest', exitCode: COMMAND_NOT_FOUND, timedOut: false, output: 'collecting\nsh: 1: python: not found\n' };
    const why = classifyCannotRun(result)!;
    const confined = cannotRunReason(result, why, true);
    expect(confined).toMatch(/^acceptance command "python -m pytest" cannot run here: exit 127 \(sh: 1: python: not found\), the program "python" is missing\. /);
    expect(confined).toContain("Polly's sandbox hides HOME but for the toolchain directories it binds back read-only: rustup, pyenv, nvm");
    expect(confined).toContain('a private, empty /tmp');
    expect(cannotRunReason(result, why, false)).toContain('not installed or not on the PATH Polly passes to commands');
    const odd = { command: 'x\u001b[31m', exitCode: COMMAND_NOT_FOUND, timedOut: false, output: '' };
    expect(cannotRunReason(odd, classifyCannotRun(odd)!, false)).toMatch(/^acceptance command "x\\x1b\[31m" cannot run here: exit 127, /);
  });
});
