/**
 * The tools a read-only worker (review, explore, search) may call, per harness, as the names the
 * adapters put on `tool_call` events (./agent-adapter.ts `AgentEvent`). A read-only worker that
 * calls any other tool asked for something its role was not given (a shell, a write, an edit): an
 * attempt, whatever the CLI answered.
 *
 * - claude: the `--tools` Polly passes (./claude-code-adapter.ts `CLAUDE_READ_ONLY_TOOLS`; Bash
 *   stays, limited by the gate's read-only role). claude answers a call of any other tool with an
 *   error tool result ("No such tool available: Write"), and the call is in its stream-json.
 * - pi: its read-only built-ins (./pi-adapter.ts `PI_READ_ONLY_TOOLS`: `read`, `grep`, `find`,
 *   `ls`; `grep`/`find` only where rg/fd exist, but a call of them is a read either way). pi answers
 *   any other tool with an error result "Tool bash not found", and the call is in its JSON stream.
 * - codex: `shell` (a `command_execution` item) and `web_search`; an `apply_patch` (`file_change`)
 *   is a write. Codex (0.171) puts no item in its `--json` stream for a call of a tool it does not
 *   declare (it answers the model "unsupported call: <name>"); the adapter reads those calls from
 *   codex's session file (./codex-rollout.ts) and adds them as `tool_call` events.
 */
import type { Harness } from '../../brain/core/vocabulary.js';
import { CLAUDE_READ_ONLY_TOOLS } from './claude-code-adapter.js';
import { PI_READ_ONLY_TOOLS } from './pi-adapter.js';

const READ_ONLY_ROLE_TOOLS: Record<Harness, ReadonlySet<string>> = {
  'claude-code': new Set(CLAUDE_READ_ONLY_TOOLS),
  pi: new Set(PI_READ_ONLY_TOOLS),
  codex: new Set(['shell', 'web_search']),
};

/** The tool names (as on `tool_call` events) a read-only worker of `harness` may call. Pure. */
export function readOnlyRoleTools(harness: Harness): ReadonlySet<string> {
  return READ_ONLY_ROLE_TOOLS[harness];
}
