/**
 * Text a worker chose (a file name in an error line, a command it tried), made safe to print on a
 * terminal, a forge or a page:
 * - C0 controls but tab and newline, DEL and C1 controls become `\xNN`, so an escape sequence
 *   (ECMA-48: `ESC ]0;…BEL` sets the window title, `ESC ]52;…` writes the clipboard, CSI `ESC [2J`
 *   clears the screen; https://ecma-international.org/publications-and-standards/standards/ecma-48/)
 *   is shown, never obeyed;
 * - Unicode's bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
 *   U+2066–U+2069: Unicode Standard Annex #9, https://www.unicode.org/reports/tr9/#Directional_Formatting_Characters),
 *   the zero-width characters (U+200B–U+200D, U+2060, U+FEFF) and the line and paragraph
 *   separators (U+2028, U+2029) become `\u{XXXX}`: a U+202E in a file name reorders the rest of the
 *   line on screen ("Trojan Source", CVE-2021-42574), and a separator breaks a line where no `\n` is;
 * - in a one-line field ({@link visibleLine}) newline becomes `\n` too (carriage return, a C0
 *   control, is `\x0d` already), so a worker's file name or command cannot forge a line of Polly's
 *   own output.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g;

/** How a hidden character is shown: `\xNN` up to U+00FF, `\u{XXXX}` above. */
function shown(c: string): string {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16).padStart(4, '0')}}`;
}

/**
 * `text` with control characters (C0 but `\t` and `\n`, DEL, C1) shown as `\xNN`, and the
 * bidirectional, zero-width and separator characters shown as `\u{XXXX}` (see the module doc).
 * Tab and newline are kept: for multi-line text (a check's output, a finding's message). Pure.
 */
export function visibleText(text: string): string {
  return text.replace(HIDDEN, shown);
}

/**
 * {@link visibleText} for a one-line field (a file name, a command, a branch, a title): newline is
 * shown as `\n` too, so the text stays on its line. Pure.
 */
export function visibleLine(text: string): string {
  return visibleText(text).replace(/\n/g, '\\n');
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
