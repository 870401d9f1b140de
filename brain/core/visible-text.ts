/**
 * Text a worker chose (a file name in an error line, a command it tried), made safe to print on a
 * terminal: C0 controls but tab and newline, DEL and C1 controls become `\xNN`, so an escape
 * sequence (ECMA-48: `ESC ]0;…BEL` sets the window title, `ESC ]52;…` writes the clipboard, CSI
 * `ESC [2J` clears the screen; https://ecma-international.org/publications-and-standards/standards/ecma-48/)
 * is shown, never obeyed.
 */

/** `text` with control characters (C0 but `\t` and `\n`, DEL, C1) shown as `\xNN`. Pure. */
export function visibleText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * `line` cut to at most `max` characters by dropping its middle (marked ` … `), never its end:
 * Polly's failure messages end with what to do (the config key that lets Claude Code run as root,
 * say), and that instruction must survive. A line that fits is returned as it is. Pure.
 */
export function elideMiddle(line: string, max: number): string {
  if (line.length <= max) return line;
  const head = Math.floor(max / 3);
  return `${line.slice(0, head)} … ${line.slice(line.length - (max - head - 3))}`;
}
