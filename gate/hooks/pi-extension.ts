/**
 * The gate as a pi extension (pi-coding-agent ≥ 0.73, docs/extensions.md "tool_call"): a handler
 * that returns `{block: true, reason}` for a denied call. `prepareGate('pi', …)` writes a two-line
 * extension file into its state dir that calls {@link createPiGate} with the runtime config path,
 * loaded with `pi --no-extensions -e <file>`. A handler that throws also blocks the tool in pi
 * (fail-safe), and the config is read once at load: a broken config blocks every call.
 */
import { askGate } from './gate-client.js';
import { denialText } from './gate-request.js';
import { readGateConfig } from './hook-runtime.js';

interface PiToolCallEvent {
  toolName: string;
  input: Record<string, unknown>;
}
interface PiContext {
  cwd?: string;
}
interface PiApi {
  on(event: 'tool_call', handler: (event: PiToolCallEvent, ctx: PiContext) => unknown): void;
}

/** pi's tool_call reply: undefined to allow, `{block: true, reason}` to deny. */
export type PiGateReply = { block: true; reason: string } | undefined;

/** The pi `tool_call` handler for a runtime config (exported for in-process tests); asks ./gate-client.ts `askGate`. */
export function piGateHandler(configPath: string): (event: PiToolCallEvent, ctx: PiContext) => Promise<PiGateReply> {
  let loadError: string | null = null;
  let cfg: ReturnType<typeof readGateConfig> | null = null;
  try {
    cfg = readGateConfig(configPath);
  } catch (error) {
    loadError = (error as Error).message;
  }
  return async (event, ctx) => {
    if (!cfg) return { block: true, reason: `Polly gate failed and blocks this call (fail closed): ${loadError}` };
    try {
      const cwd = typeof ctx?.cwd === 'string' ? ctx.cwd : process.cwd();
      const d = await askGate(cfg, { v: 1, from: 'pi', cwd, toolName: event.toolName, toolInput: event.input });
      return d.decision === 'allow' ? undefined : { block: true, reason: denialText(d) };
    } catch (error) {
      return { block: true, reason: `Polly gate failed and blocks this call (fail closed): ${(error as Error).message}` };
    }
  };
}

/** Build the pi extension factory (`export default createPiGate(path)` in the generated file). */
export function createPiGate(configPath: string): (pi: PiApi) => void {
  return (pi) => {
    const handler = piGateHandler(configPath);
    pi.on('tool_call', (event, ctx) => handler(event, ctx));
  };
}
