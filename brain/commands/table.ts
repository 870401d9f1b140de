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
}

function cell(v: string | number | null | undefined, max: number): string {
  const text = v === null || v === undefined || v === '' ? '-' : String(v).replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, Math.max(1, max - 1))}…` : text;
}

/** Render `rows` under `columns` as lines (header first), without trailing spaces. */
export function formatTable<Row>(columns: readonly Column<Row>[], rows: readonly Row[]): string[] {
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r), c.max ?? 40)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (parts: string[]): string =>
    parts
      .map((p, i) => p.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)];
}
