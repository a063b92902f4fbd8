/** Which table columns hold figures (spec 2.9: documents' tables right-align their columns of figures). */

const CURRENCY = "[$€£¥₹₩₽₪₫₺₴₦฿₱¢]";
const FIGURE_RE = new RegExp(
  `^[+\\-−]?\\(?(?:(?:[A-Z]{3}|${CURRENCY})\\s?)?[+\\-−]?(?:\\d{1,3}(?:[,\\u00a0\\u202f ]\\d{3})+|\\d+)?(?:\\.\\d+)?` +
    `(?:\\s?(?:[kKMBT]|bn|mn))?\\s?[%‰]?(?:\\s?(?:[A-Z]{3}|${CURRENCY}))?\\)?$`,
  "u",
);
/** Cells that say "no value" and neither make nor break a column of figures. */
const BLANK_CELL = /^(?:|[-–—]|n\/?a)$/i;

/**
 * True when a table cell's text is a figure: a number with optional sign (`-`, `+`, `−`, or accounting
 * parentheses), thousands separators, decimals, a magnitude (`k`, `M`, `B`, `bn`), `%`/`‰`, and a currency
 * symbol or three-letter code before or after (`214,800`, `37.7%`, `$1.2M`, `-3`, `USD 5,000`, `(1,200)`).
 */
export function isFigureText(text: string): boolean {
  const t = text.trim();
  return /\d/.test(t) && FIGURE_RE.test(t);
}

/**
 * True when a column's body cells (their text) are all figures, blank cells and dashes aside, and at
 * least one is a figure.
 */
export function isFigureColumn(cells: readonly string[]): boolean {
  const texts = cells.map((t) => t.trim());
  return texts.some(isFigureText) && texts.every((t) => isFigureText(t) || BLANK_CELL.test(t));
}
