/**
 * Each harness's tool calls mapped onto the gate's tools (bash, write, edit, read). Pure.
 *
 * Sources: Claude Code hooks reference (code.claude.com/docs/en/hooks: PreToolUse input
 * `tool_name`, `tool_input`, `cwd`); Codex hooks (developers.openai.com/codex/hooks and
 * openai/codex#18391: shell calls arrive as `Bash` with `tool_input.command`, `apply_patch` with the
 * raw patch in `tool_input.command`); pi extensions (pi-coding-agent docs/extensions.md, `tool_call`
 * event: `toolName` bash/read/write/edit/grep/find/ls, `input.command` / `input.path`).
 */
import type { GateDecision, GateRole, GateTool } from '../types.js';

/** One gate check derived from a harness tool call. */
export interface MappedCall {
  tool: GateTool;
  input: string;
}

/** A harness call mapped to checks, or a reason it cannot be checked (→ deny). */
export type MappedResult = { ok: true; calls: MappedCall[] } | { ok: false; reason: string };

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

const CLAUDE_READ_TOOLS = new Set([
  'Read',
  'Glob',
  'Grep',
  'LS',
  'NotebookRead',
  'WebFetch',
  'WebSearch',
  'TodoWrite',
  'TodoRead',
  'Task',
  'Agent',
  'BashOutput',
  'KillShell',
  'KillBash',
  'ExitPlanMode',
  'AskUserQuestion',
  'Skill',
  'SlashCommand',
  'ListMcpResourcesTool',
  'ReadMcpResourceTool',
  'TaskOutput',
  'TaskStop',
  'EnterPlanMode',
  'ToolSearch',
  'Monitor',
]);

/** Claude Code `tool_name` + `tool_input` → gate checks. */
export function mapClaudeTool(toolName: unknown, input: unknown): MappedResult {
  const i = (input ?? {}) as Record<string, unknown>;
  const name = String(toolName);
  if (name === 'Bash') {
    const c = str(i.command);
    return c === null ? { ok: false, reason: 'Bash call without a command string' } : { ok: true, calls: [{ tool: 'bash', input: c }] };
  }
  if (name === 'Write' || name === 'Edit' || name === 'MultiEdit' || name === 'NotebookEdit') {
    const p = str(i.file_path) ?? str(i.notebook_path);
    return p === null ? { ok: false, reason: `${name} call without a file_path` } : { ok: true, calls: [{ tool: name === 'Write' ? 'write' : 'edit', input: p }] };
  }
  if (CLAUDE_READ_TOOLS.has(name)) return { ok: true, calls: [{ tool: 'read', input: str(i.file_path) ?? str(i.path) ?? '' }] };
  return { ok: false, reason: `tool ${name} is not one the gate knows how to check (MCP and unknown tools are denied for workers)` };
}

/** Prefix of the tools of Polly's own MCP server as Claude Code names them (`mcp__<server>__<tool>`, server `polly`). */
export const POLLY_MCP_PREFIX = 'mcp__polly__';

/**
 * Claude Code MCP calls to Polly's own server (`mcp__polly__<tool>`): allowed for the `brain` role
 * (rule `allow.polly_mcp`; the dispatch tools behind them pass the gate themselves:
 * `spawn_bounds`, `purpose_guard`, the plan gate). Returns null for every other call, including
 * any MCP call by a worker role, so {@link mapClaudeTool} decides it (MCP tools stay denied for workers).
 * Tool name format: Claude Code docs, "MCP tools appear as mcp__<server>__<tool>" (code.claude.com/docs/en/mcp).
 */
export function pollyMcpDecision(role: GateRole, toolName: unknown): GateDecision | null {
  const name = String(toolName);
  if (role !== 'brain' || !name.startsWith(POLLY_MCP_PREFIX)) return null;
  if (!/^[A-Za-z0-9_-]+$/.test(name.slice(POLLY_MCP_PREFIX.length))) return null;
  return { decision: 'allow', rule: 'allow.polly_mcp', reason: `the Brain calls Polly's own MCP tool ${name.slice(POLLY_MCP_PREFIX.length)}` };
}

/** Paths a Codex `apply_patch` body touches (`*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`). */
export function patchPaths(patch: string): string[] {
  const out: string[] = [];
  for (const line of patch.split(/\r?\n/)) {
    const m = /^\*\*\* (?:Add File|Update File|Delete File|Move to):\s*(.+?)\s*$/.exec(line);
    if (m) out.push(m[1] as string);
  }
  return out;
}

function shellJoin(argv: string[]): string {
  return argv.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** Codex `tool_name` + `tool_input` → gate checks. */
export function mapCodexTool(toolName: unknown, input: unknown): MappedResult {
  const i = (input ?? {}) as Record<string, unknown>;
  const name = String(toolName);
  if (name === 'Bash' || name === 'shell' || name === 'local_shell' || name === 'exec_command' || name === 'shell_command' || name === 'unified_exec') {
    const c = i.command ?? i.cmd;
    if (typeof c === 'string') return { ok: true, calls: [{ tool: 'bash', input: c }] };
    if (Array.isArray(c) && c.every((x) => typeof x === 'string')) {
      const argv = c as string[];
      // ["bash", "-lc", "script"] carries the script itself
      if (argv.length === 3 && /(^|\/)(ba|z|da)?sh$/.test(argv[0] as string) && /^-[a-z]*c$/.test(argv[1] as string))
        return { ok: true, calls: [{ tool: 'bash', input: argv[2] as string }] };
      return { ok: true, calls: [{ tool: 'bash', input: shellJoin(argv) }] };
    }
    return { ok: false, reason: `${name} call without a command` };
  }
  if (name === 'apply_patch' || name === 'Edit' || name === 'Write') {
    const body = str(i.command) ?? str(i.patch) ?? str(i.input);
    const direct = str(i.file_path) ?? str(i.path);
    if (direct !== null) return { ok: true, calls: [{ tool: 'edit', input: direct }] };
    if (body === null) return { ok: false, reason: `${name} call without a patch` };
    const paths = patchPaths(body);
    if (paths.length === 0) return { ok: false, reason: 'apply_patch body names no file the gate can check' };
    return { ok: true, calls: paths.map((p) => ({ tool: 'edit' as const, input: p })) };
  }
  if (name === 'read_file' || name === 'view_image' || name === 'list_dir' || name === 'grep_files' || name === 'update_plan' || name === 'web_search') {
    return { ok: true, calls: [{ tool: 'read', input: str(i.path) ?? '' }] };
  }
  return { ok: false, reason: `tool ${name} is not one the gate knows how to check (MCP and unknown tools are denied for workers)` };
}

/** pi `toolName` + `input` → gate checks. */
export function mapPiTool(toolName: unknown, input: unknown): MappedResult {
  const i = (input ?? {}) as Record<string, unknown>;
  const name = String(toolName);
  if (name === 'bash') {
    const c = str(i.command);
    return c === null ? { ok: false, reason: 'bash call without a command' } : { ok: true, calls: [{ tool: 'bash', input: c }] };
  }
  if (name === 'write' || name === 'edit') {
    const p = str(i.path) ?? str(i.file_path);
    return p === null ? { ok: false, reason: `${name} call without a path` } : { ok: true, calls: [{ tool: name, input: p }] };
  }
  if (name === 'read' || name === 'grep' || name === 'find' || name === 'ls') return { ok: true, calls: [{ tool: 'read', input: str(i.path) ?? '' }] };
  return { ok: false, reason: `tool ${name} is not one the gate knows how to check` };
}
