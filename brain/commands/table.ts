/**
 * Plain-text tables for human output (`polly status`, listings): left-aligned columns separated by
 * two spaces, cells flattened to one line and cut to a maximum width with an ellipsis.
 */

export interface Column<Row> {
  header: string;
  /** The cell text; null/undefined prints as `-`. */
  value(row: Row): string | number | null | undefined;
  /** Longest cell in characters (default 40); longer cells end in `…`. */
  max?: number;
  /** Narrowest this column is cut to when the table must fit a width (default: its header, at least 6). */
  min?: number;
  /** When the table cannot fit a width otherwise, columns with a rank leave, highest first; without one a column stays. */
  drop?: number;
}

function cell(v: string | number | null | undefined, max: number): string {
  const text = v === null || v === undefined || v === '' ? '-' : String(v).replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, Math.max(1, max - 1))}…` : text;
}

/** What {@link formatTable} may do to fit a terminal: the width and, filled in, the columns it left out. */
export interface TableFit {
  /** Characters a line may take. */
  width: number;
  /** Set by {@link formatTable}: the headers of the columns it left out to fit (none: empty). */
  hidden?: string[];
}

/**
 * Render `rows` under `columns` as lines (header first), without trailing spaces. With `fit`, the
 * lines are at most `fit.width` characters: the columns with the most room above their `min`
 * (default the header's length, at least 6) are cut first, each cell ending in `…`; if that is not
 * enough, columns with a `drop` rank leave, highest rank first, named in `fit.hidden`.
 */
export function formatTable<Row>(columns: readonly Column<Row>[], rows: readonly Row[], fit?: TableFit): string[] {
  const full = rows.map((r) => columns.map((c) => cell(c.value(r), c.max ?? 40)));
  let shown = columns.map((_, i) => i);
  const natural = (i: number) => Math.max(columns[i]!.header.length, ...full.map((row) => row[i]!.length));
  const floor = (i: number) => Math.min(natural(i), Math.max(columns[i]!.header.length, columns[i]!.min ?? 6));
  let widths = new Map(shown.map((i) => [i, natural(i)]));
  const total = () => shown.reduce((n, i) => n + widths.get(i)!, 0) + 2 * (shown.length - 1);
  if (fit) {
    fit.hidden = [];
    for (;;) {
      // Cut the roomiest columns first, one character at a time.
      while (total() > fit.width) {
        const roomiest = shown.reduce<number | null>(
          (best, i) => (widths.get(i)! - floor(i) > 0 && (best === null || widths.get(i)! - floor(i) > widths.get(best)! - floor(best)) ? i : best),
          null,
        );
        if (roomiest === null) break;
        widths.set(roomiest, widths.get(roomiest)! - 1);
      }
      if (total() <= fit.width) break;
      const droppable = shown.filter((i) => columns[i]!.drop !== undefined).sort((a, b) => columns[b]!.drop! - columns[a]!.drop!);
      if (droppable.length === 0) break;
      shown = shown.filter((i) => i !== droppable[0]);
      fit.hidden.push(columns[droppable[0]!]!.header);
      widths = new Map(shown.map((i) => [i, natural(i)]));
    }
  }
  const line = (parts: string[]): string =>
    shown
      .map((i) => {
        const w = widths.get(i)!;
        const p = parts[i]!;
        return (p.length > w ? `${p.slice(0, Math.max(1, w - 1))}…` : p).padEnd(w);
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...full.map(line)];
}

/**
 * `line` wrapped at spaces to lines of at most `width` characters (a word longer than that is cut
 * hard); the lines after the first are indented two more than the first's own indent.
 */
export function wrapLine(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const indent = ' '.repeat(Math.min(/^ */.exec(line)![0].length + 2, Math.floor(width / 2)));
  const out: string[] = [];
  let rest = line;
  let first = true;
  while (rest.length > 0) {
    const room = first ? width : width - indent.length;
    const text = first ? rest : rest.trimStart();
    if (text.length <= room) {
      out.push(first ? text : indent + text);
      break;
    }
    let cut = text.lastIndexOf(' ', room);
    if (cut <= (first ? /^ */.exec(text)![0].length : 0)) cut = room;
    out.push((first ? '' : indent) + text.slice(0, cut).trimEnd());
    rest = text.slice(cut);
    first = false;
  }
  return out;
}
