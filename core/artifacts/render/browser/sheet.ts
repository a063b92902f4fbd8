/**
 * The sheet grid in the browser (spec 2.8): each `[data-svc-sheet]` container written by renderSheetView
 * (render/sheet-view.ts) becomes a virtualized table. Only the rows in view (plus some overscan) are in
 * the DOM, between two spacer rows that keep the scroll height of every row; pages of raw rows come from
 * the rows API (same origin, the reader's session) as the reader scrolls and are formatted in
 * `navigator.language`. The header rows and the frozen columns stay put (CSS sticky). Also switches the
 * view's tabs in place (ARIA tabs: click, arrow keys, Home, End), keeping `?part=` in the address bar.
 *
 * Bundled by render/assets.ts as `sheet` (an IIFE); the page includes it after the view's markup.
 */
import { MAX_FROZEN_DATA_ROWS, artifactFileUrl, artifactPageHref, columnLetters, columnWidth, formatCell, type CellType, type SheetGridConfig } from "../format";

/**
 * PAGE rows per request to the rows API; OVERSCAN rows rendered beyond the visible ones, above and below;
 * the rendered window moves in steps of BLOCK rows; MAX_PAGES pages kept in memory (the first stays);
 * MAX_INFLIGHT requests at once; a page that failed is tried again after RETRY_MS.
 */
const [PAGE, OVERSCAN, BLOCK, MAX_PAGES, MAX_INFLIGHT, RETRY_MS] = [200, 6, 8, 100, 4, 3000];

type PageState = { state: "loading" } | { state: "loaded" } | { state: "failed"; at: number };

class SheetGrid {
  private readonly locale = navigator.language || "en-US";
  private readonly rows: Array<string[] | undefined>;
  private readonly pages = new Map<number, PageState>();
  private inflight = 0;
  private readonly frozenData: number;
  private readonly bodyCount: number;
  private readonly widths: number[];
  private readonly lefts: number[] = [];
  private readonly gutter: number;
  private readonly frozenColumns: number;
  private readonly table = document.createElement("table");
  private readonly thead = document.createElement("thead");
  private readonly tbody = document.createElement("tbody");
  private readonly top: HTMLTableRowElement;
  private readonly bottom: HTMLTableRowElement;
  private rowHeight = 32;
  private window = { start: -1, end: -1 };
  /** The body rows in the DOM, in order: element, body index, whether it shows data (not a placeholder). */
  private readonly live: Array<{ tr: HTMLTableRowElement; b: number; filled: boolean }> = [];
  private readonly free: HTMLTableRowElement[] = [];
  private measured = false;
  private dirty = true;
  private frame = 0;
  private failed = false;

  constructor(
    private readonly root: HTMLElement,
    private readonly scroll: HTMLElement,
    private readonly config: SheetGridConfig,
  ) {
    this.top = this.spacer();
    this.bottom = this.spacer();
    this.rows = new Array(config.total);
    config.rows.slice(0, config.total).forEach((r, i) => (this.rows[i] = r));
    for (let p = 0; (p + 1) * PAGE <= config.rows.length; p++) this.pages.set(p, { state: "loaded" });
    this.frozenData = Math.max(0, Math.min(config.frozenRows - 1, MAX_FROZEN_DATA_ROWS, config.total));
    this.bodyCount = config.total - this.frozenData;
    this.widths = config.columns.map((c) => columnWidth(c.name, c.type, config.widths));
    this.gutter = Math.max(48, 20 + 8 * String(config.total + 1).length);
    this.frozenColumns = Math.min(config.frozenColumns, config.columns.length);
    this.widths.reduce((left, w, c) => ((this.lefts[c] = left), left + w), this.gutter);
    this.build();
    scroll.addEventListener("scroll", () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(scroll);
    root.setAttribute("data-live", "");
    this.update();
  }

  private spacer(): HTMLTableRowElement {
    const tr = el("tr", "sheet-spacer");
    tr.setAttribute("aria-hidden", "true");
    const td = el("td", "");
    td.colSpan = this.config.columns.length + 1;
    td.style.height = "0px";
    tr.append(td);
    return tr;
  }

  private cellClass(c: number, type: CellType): string {
    const numeric = type.type === "number" || type.type === "currency" || type.type === "percent";
    return `sheet-cell${numeric ? " sheet-num" : ""}${type.type === "image" ? " sheet-image" : ""}${c < this.frozenColumns ? " sheet-frozen" : ""}${c === this.frozenColumns - 1 ? " sheet-frozen-last" : ""}`;
  }

  private stick<E extends HTMLElement>(cell: E, c: number): E {
    if (c < this.frozenColumns) cell.style.left = `${this.lefts[c]}px`;
    return cell;
  }

  /** The table: column widths, the letters row, the header row (row 1), frozen rows, and the body. */
  private build(): void {
    const { config, table } = this;
    table.className = `sheet-table${config.frozenRows > 0 ? " sheet-frozen-head" : ""}`;
    table.style.width = `${this.gutter + this.widths.reduce((a, b) => a + b, 0)}px`;
    table.setAttribute("aria-rowcount", String(config.total + 1));
    table.setAttribute("aria-label", config.sheet);
    const colgroup = el("colgroup", "");
    for (const w of [this.gutter, ...this.widths]) colgroup.append(el("col", "")), ((colgroup.lastElementChild as HTMLElement).style.width = `${w}px`);
    this.thead.className = "sheet-head";
    const letters = el("tr", "sheet-letters");
    letters.setAttribute("aria-hidden", "true");
    letters.append(el("td", "sheet-corner"));
    const header = el("tr", "sheet-header");
    header.setAttribute("aria-rowindex", "1");
    header.append(this.rowNumber(1));
    config.columns.forEach((c, ci) => {
      letters.append(this.stick(el("td", `${this.cellClass(ci, c.type)} sheet-letter`, columnLetters(ci)), ci));
      header.append(this.stick(Object.assign(el("th", this.cellClass(ci, c.type), c.name), { scope: "col", title: c.name }), ci));
    });
    this.thead.append(letters, header);
    this.tbody.className = "sheet-body";
    this.tbody.append(this.top, this.bottom);
    table.append(colgroup, this.thead, this.tbody);
    this.renderFrozen();
    this.scroll.replaceChildren(table);
  }

  private rowNumber(n: number): HTMLTableCellElement {
    return Object.assign(el("th", "sheet-rownum", String(n)), { scope: "row" });
  }

  /** An empty row element: the gutter and one cell per column (filled by {@link SheetGrid.fill}). */
  private newRow(): HTMLTableRowElement {
    const tr = el("tr", "");
    tr.append(this.rowNumber(0));
    this.config.columns.forEach((c, ci) => tr.append(this.stick(el("td", this.cellClass(ci, c.type)), ci)));
    return tr;
  }

  /**
   * Shows data row `d` (0-based) in `tr`, changing only what differs (rows are recycled while
   * scrolling: updating text is much cheaper than making elements). Answers whether the row had its data.
   */
  private fill(tr: HTMLTableRowElement, d: number): boolean {
    const values = this.rows[d];
    const cls = values ? "sheet-row" : "sheet-row sheet-pending";
    if (tr.className !== cls) tr.className = cls;
    tr.setAttribute("aria-rowindex", String(d + 2));
    setText(tr.firstElementChild as HTMLElement, String(d + 2));
    const { columns, artifactId, version, basePath } = this.config;
    let td = tr.firstElementChild!.nextElementSibling as HTMLTableCellElement | null;
    for (let ci = 0; ci < columns.length && td; ci++, td = td.nextElementSibling as HTMLTableCellElement | null) {
      if (!values) {
        if (td.firstChild) td.textContent = "";
        if (td.title) td.removeAttribute("title");
        continue;
      }
      const f = formatCell(values[ci] ?? "", columns[ci]!.type, this.locale);
      const href = f.href ?? (f.address ? artifactPageHref(f.address, basePath) : undefined);
      if (href) {
        const a = only(td, "a");
        setAttr(a, "href", href);
        setAttr(a, "target", f.href ? "_blank" : null);
        setAttr(a, "rel", f.href ? "noopener noreferrer" : null);
        setText(a, f.text);
      } else if (f.image) {
        const img = only(td, "img");
        setAttr(img, "loading", "lazy");
        setAttr(img, "src", artifactFileUrl(artifactId, version, f.image, basePath));
        setAttr(img, "alt", f.image);
      } else setText(td, f.text);
      const title = f.text.length > 16 ? f.text : "";
      if (td.title !== title) td.title = title;
    }
    return values !== undefined;
  }

  /** Frozen data rows sit in the sticky header, under the header row. */
  private renderFrozen(): void {
    const frozen = this.thead.querySelectorAll(".sheet-frozen-row");
    frozen.forEach((r) => r.remove());
    for (let d = 0; d < this.frozenData; d++) {
      const tr = this.newRow();
      this.fill(tr, d);
      tr.classList.add("sheet-frozen-row");
      this.thead.append(tr);
    }
  }

  private schedule(): void {
    this.frame ||= requestAnimationFrame(() => ((this.frame = 0), this.update()));
  }

  /** Renders the window of rows in view (when it moved or data arrived) and asks for missing pages. */
  update(): void {
    const viewport = this.scroll.clientHeight;
    if (viewport === 0) return; // hidden panel: the ResizeObserver calls again when it shows
    const headHeight = this.thead.offsetHeight;
    const stuck = this.config.frozenRows > 0 ? headHeight : 0;
    const s = this.scroll.scrollTop;
    const rh = this.rowHeight;
    const first = Math.floor((s + stuck - headHeight) / rh);
    const last = Math.floor((s + viewport - headHeight) / rh);
    const start = Math.max(0, Math.floor((first - OVERSCAN) / BLOCK) * BLOCK);
    const end = Math.min(this.bodyCount, Math.max(start, Math.ceil((last + 1 + OVERSCAN) / BLOCK) * BLOCK));
    if (this.dirty || start !== this.window.start || end !== this.window.end) {
      this.window = { start, end };
      this.dirty = false;
      this.render(start, end);
    }
    this.request(start + this.frozenData, end + this.frozenData);
  }

  /**
   * Shows body rows [start, end) between the spacers. Rows still in the window stay as they are (refilled
   * only when their data arrived); rows that left it are reused for those that entered; after a jump
   * (no overlap) every row is refilled in place.
   */
  private render(start: number, end: number): void {
    const live = this.live;
    const fd = this.frozenData;
    const take = () => this.free.pop() ?? this.newRow();
    const first = live[0]?.b ?? -1;
    const last = live.length ? live[live.length - 1]!.b : -2;
    const drop = (gone: { tr: HTMLTableRowElement } | undefined) => gone && (gone.tr.remove(), this.free.push(gone.tr));
    const add = (b: number, before: Node, front: boolean) => {
      const tr = take();
      const row = { tr, b, filled: this.fill(tr, b + fd) };
      this.tbody.insertBefore(tr, before);
      if (front) live.unshift(row);
      else live.push(row);
    };
    if (!live.length || last < start || first >= end) {
      // a jump: refill in place, adding or dropping rows at the end
      while (live.length < end - start) add(-1, this.bottom, false);
      while (live.length > end - start) drop(live.pop());
      live.forEach((r, i) => ((r.b = start + i), (r.filled = this.fill(r.tr, r.b + fd))));
    } else {
      while (live.length && live[0]!.b < start) drop(live.shift());
      while (live.length && live[live.length - 1]!.b >= end) drop(live.pop());
      for (const r of live) if (!r.filled && this.rows[r.b + fd]) r.filled = this.fill(r.tr, r.b + fd);
      for (let b = live[0]!.b - 1; b >= start; b--) add(b, live[0]!.tr, true);
      for (let b = live[live.length - 1]!.b + 1; b < end; b++) add(b, this.bottom, false);
    }
    setHeight(this.top, start * this.rowHeight);
    setHeight(this.bottom, (this.bodyCount - end) * this.rowHeight);
    this.table.setAttribute("aria-busy", String(live.some((r) => !r.filled)));
    if (!this.measured && live.length) {
      this.measured = true;
      const height = live[0]!.tr.getBoundingClientRect().height;
      if (height && Math.abs(height - this.rowHeight) > 0.5) {
        this.rowHeight = height; // the CSS row height: spacers follow it
        this.dirty = true;
        this.schedule();
      }
    }
  }

  /** Asks for the pages holding data rows [from, to) that are neither here nor on their way. */
  private request(from: number, to: number): void {
    if (to <= from) return;
    for (let p = Math.floor(from / PAGE); p * PAGE < to && this.inflight < MAX_INFLIGHT; p++) {
      const page = this.pages.get(p);
      if (page?.state === "loaded") {
        this.pages.delete(p);
        this.pages.set(p, page); // most recently used last
        continue;
      }
      if (page?.state === "loading" || (page?.state === "failed" && Date.now() - page.at < RETRY_MS)) continue;
      void this.load(p);
    }
  }

  private async load(p: number): Promise<void> {
    this.pages.set(p, { state: "loading" });
    this.inflight++;
    try {
      const res = await fetch(`${this.config.rowsUrl}?offset=${p * PAGE}&limit=${PAGE}`, { credentials: "same-origin", headers: { accept: "application/json" } });
      if (!res.ok) throw new Error(`rows API answered ${res.status}`);
      const body = (await res.json()) as { rows: string[][] };
      body.rows.forEach((r, i) => p * PAGE + i < this.config.total && (this.rows[p * PAGE + i] = r));
      this.pages.set(p, { state: "loaded" });
      this.evict();
      if (this.failed) this.status(false);
      if (p * PAGE < this.frozenData) this.renderFrozen();
      if (this.shows(p)) this.dirty = true;
    } catch {
      this.pages.set(p, { state: "failed", at: Date.now() });
      this.status(true);
      setTimeout(() => this.schedule(), RETRY_MS);
    } finally {
      this.inflight--;
      this.schedule();
    }
  }

  /** Whether page `p` holds rows of the rendered window. */
  private shows(p: number): boolean {
    return p * PAGE < this.window.end + this.frozenData && (p + 1) * PAGE > this.window.start + this.frozenData;
  }

  /** Drops the least recently used pages beyond MAX_PAGES (never the first, which holds frozen rows). */
  private evict(): void {
    let loaded = 0;
    for (const s of this.pages.values()) if (s.state === "loaded") loaded++;
    for (const [p, s] of this.pages) {
      if (loaded <= MAX_PAGES) break;
      if (s.state !== "loaded" || p === 0 || this.shows(p)) continue;
      for (let i = p * PAGE; i < Math.min((p + 1) * PAGE, this.config.total); i++) this.rows[i] = undefined;
      this.pages.delete(p);
      loaded--;
    }
  }

  private status(failed: boolean): void {
    this.failed = failed;
    const shown = this.root.querySelector<HTMLElement>(".sheet-status-error");
    if (failed && !shown) this.root.querySelector(".sheet-status")?.append(el("span", "sheet-status-error", " · some rows could not be loaded; retrying"));
    else if (!failed) shown?.remove();
  }
}

/** A new element with a class and, optionally, text. */
function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The one child `tag` element of a cell, made (replacing the cell's content) when it is not there. */
function only<K extends keyof HTMLElementTagNameMap>(cell: HTMLElement, tag: K): HTMLElementTagNameMap[K] {
  const child = cell.firstChild;
  if (child instanceof HTMLElement && child.localName === tag && !child.nextSibling) return child as HTMLElementTagNameMap[K];
  const made = document.createElement(tag);
  cell.replaceChildren(made);
  return made;
}

/** Sets (or, for null, removes) an attribute when it differs. */
function setAttr(node: Element, name: string, value: string | null): void {
  if (node.getAttribute(name) === value) return;
  if (value === null) node.removeAttribute(name);
  else node.setAttribute(name, value);
}

/** Sets an element's text, touching the DOM only when it changed (one text node reused). */
function setText(el: HTMLElement, text: string): void {
  const node = el.firstChild;
  if (node && node.nodeType === Node.TEXT_NODE && !node.nextSibling) {
    if ((node as Text).data !== text) (node as Text).data = text;
  } else el.textContent = text;
}

/** A spacer row's height. */
const setHeight = (spacer: HTMLTableRowElement, px: number) => ((spacer.firstElementChild as HTMLElement).style.height = `${px}px`);

/** Switches a view's tabs in place (ARIA tabs pattern) and keeps `?part=` in the address bar. */
function setupTabs(view: HTMLElement): void {
  const tabs = [...view.querySelectorAll<HTMLAnchorElement>(".sheet-tabs > [role=tab]")];
  const select = (tab: HTMLAnchorElement, focus: boolean) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      const panel = document.getElementById(t.getAttribute("aria-controls") ?? "");
      if (panel) panel.hidden = !on;
    }
    if (focus) tab.focus();
    history.replaceState(history.state, "", tab.href);
  };
  for (const tab of tabs) {
    tab.addEventListener("click", (e) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      select(tab, false);
    });
    tab.addEventListener("keydown", (e) => {
      const i = tabs.indexOf(tab);
      const next = e.key === "ArrowRight" ? tabs[(i + 1) % tabs.length] : e.key === "ArrowLeft" ? tabs[(i - 1 + tabs.length) % tabs.length] : e.key === "Home" ? tabs[0] : e.key === "End" ? tabs[tabs.length - 1] : undefined;
      if (!next) return;
      e.preventDefault();
      select(next, true);
    });
  }
}

/** Starts every sheet view and grid on the page (once each). */
function start(): void {
  for (const view of document.querySelectorAll<HTMLElement>("[data-svc-sheet-view]:not([data-ready])")) {
    view.setAttribute("data-ready", "");
    setupTabs(view);
  }
  for (const root of document.querySelectorAll<HTMLElement>("[data-svc-sheet]:not([data-live])")) {
    const json = root.querySelector("script.sheet-config")?.textContent;
    const scroll = root.querySelector<HTMLElement>(".sheet-scroll");
    if (!json || !scroll) continue;
    try {
      new SheetGrid(root, scroll, JSON.parse(json) as SheetGridConfig);
    } catch (err) {
      console.error("sheet grid:", err);
    }
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
