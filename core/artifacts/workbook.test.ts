import { Readable } from "node:stream";
import * as fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { columnLetter } from "./cell-range";
import { isCalendarDate, isPlainNumber, isWebAddress } from "./cell-values";
import { validateWorkbook, type WorkbookInput } from "./workbook";
import { truncate, WorkbookSchema } from "./workbook-schema";

/** Real CSV bytes as a stream, cut into small chunks so cells and quotes straddle chunk boundaries. */
const bytes = (text: string, chunk = 7): NodeJS.ReadableStream => {
  const buf = Buffer.from(text, "utf8");
  return Readable.from((function* () { for (let i = 0; i < buf.length; i += chunk) yield buf.subarray(i, i + chunk); })());
};

/** A CSV generated row by row as it is read (memory flat); `produced()` says how many rows were made. */
function generated(header: string[], rows: number, row: (i: number) => string) {
  let made = 0;
  const stream = Readable.from(
    (function* () {
      yield Buffer.from(header.join(",") + "\n");
      let buf = "";
      for (let i = 0; i < rows; i++) {
        buf += row(i) + "\n";
        made++;
        if (buf.length >= 64 * 1024) {
          yield Buffer.from(buf);
          buf = "";
        }
      }
      if (buf) yield Buffer.from(buf);
    })(),
  );
  return { stream, produced: () => made };
}

type Files = Record<string, string | (() => NodeJS.ReadableStream)>;
const IMAGES = new Set(["images/logo.png", "images/ünïcode chart.png"]);
function check(workbookJson: unknown, files: Files, extra: Partial<WorkbookInput> = {}) {
  const opened: string[] = [];
  return validateWorkbook({
    workbookJson,
    openCsv: async (path) => {
      opened.push(path);
      const f = files[path];
      return f === undefined ? null : typeof f === "string" ? bytes(f) : f();
    },
    hasImage: (path) => IMAGES.has(path),
    isArtifactAddress: (value) => /^artifact:art_[0-9A-Za-z]+/.test(value),
    ...extra,
  });
}
/** A one-sheet workbook named "Revenue" with these column types and CSV text. */
const oneSheet = (columns: Record<string, unknown>, csv: string, more: Record<string, unknown> = {}) =>
  check({ sheets: [{ name: "Revenue", columns, ...more }] }, { "sheets/Revenue.csv": csv });
const messages = (r: { problems: Array<{ message: string }> }) => r.problems.map((p) => p.message);

describe("a valid workbook", () => {
  it("passes with several sheets, every column type, empty cells, quoting, CRLF, BOM and charts", async () => {
    const revenue =
      "\uFEFFMonth,Region,Amount,Units,Share,Site,Logo,Note\r\n" +
      '2026-01-31,North,1200.5,12,0.125,https://example.com/a?b=1,images/logo.png,"comma, and ""quotes"""\r\n' +
      '2024-02-29,South,-12.5,1e3,1,HTTP://EXAMPLE.COM,,"two\r\nlines"\r\n' +
      "2026-03-01,,0,0,0.5,artifact:art_01ABC@2#chart=Costs,images/ünïcode chart.png,\r\n" +
      ",,,,,,,\r\n" +
      "\r\n\r\n"; // blank lines at the end are not rows
    const costs = "Category,Cost\nRent,2500\nPeople,9000.75\nTools,2.5E-1\n";
    const r = await check(
      {
        sheets: [
          {
            name: "Revenue",
            frozenRows: 2,
            frozenColumns: 1,
            widths: { Month: 120, Note: 300 },
            columns: { Month: "date", Region: { type: "text" }, Amount: { type: "currency", currency: "USD" }, Units: "number", Share: { type: "percent", decimals: 1 }, Site: "link", Logo: "image" },
          },
          { name: "Coûts 2026", columns: { Cost: { type: "currency", currency: "EUR" } } },
        ],
        charts: [
          { name: "Revenue by month", type: "bar", sheet: "Revenue", x: "Month", y: ["Amount", "Units"], stacked: true, title: "Revenue" },
          { name: "Share", type: "line", sheet: "Revenue", x: "Month", y: ["Share"] },
          { name: "Area", type: "area", sheet: "Revenue", x: "Region", y: ["Amount"], stacked: false },
          { name: "Costs", type: "pie", sheet: "Coûts 2026", x: "Category", y: ["Cost"] },
        ],
      },
      { "sheets/Revenue.csv": revenue, "sheets/Coûts 2026.csv": costs },
    );
    expect(r.problems).toEqual([]);
    expect(r).toMatchObject({ ok: true, totalProblems: 0 });
    expect(r.sheets).toEqual([
      { name: "Revenue", columns: ["Month", "Region", "Amount", "Units", "Share", "Site", "Logo", "Note"], rows: 4 },
      { name: "Coûts 2026", columns: ["Category", "Cost"], rows: 3 },
    ]);
    expect(r.charts).toEqual([
      { name: "Revenue by month", sheet: "Revenue" },
      { name: "Share", sheet: "Revenue" },
      { name: "Area", sheet: "Revenue" },
      { name: "Costs", sheet: "Coûts 2026" },
    ]);
    expect(r.links).toEqual([{ file: "sheets/Revenue.csv", row: 4, column: "Site", address: "artifact:art_01ABC@2#chart=Costs" }]);
  });

  it("WorkbookSchema fills the defaults", () => {
    expect(v.parse(WorkbookSchema, { sheets: [{ name: "A" }] })).toEqual({ sheets: [{ name: "A", frozenRows: 1, frozenColumns: 0, widths: {}, columns: {} }], charts: [] });
  });

  it("WorkbookSchema refuses duplicate names and charts on a missing sheet", () => {
    const r = v.safeParse(WorkbookSchema, { sheets: [{ name: "A" }, { name: "A" }], charts: [{ name: "c", type: "bar", sheet: "B", x: "a", y: ["b"] }] });
    expect(r.issues?.map((i) => i.message)).toEqual([
      'sheets[1] (sheet "A").name: "A" is also the name of sheets[0]; sheet names must be unique',
      'charts[0] (chart "c").sheet: no sheet is named "B"; the sheets are "A"',
    ]);
  });
});

describe("cells: raw values only", () => {
  const columns = { Amount: "number", Price: { type: "currency", currency: "EUR" }, Share: "percent", Day: "date", Site: "link", Logo: "image" };
  const header = "Name,Amount,Price,Share,Day,Site,Logo\n";
  const ok = "x,1,1,0.5,2026-01-01,https://a.example,images/logo.png";

  it.each([
    ["1,234", 1, `sheets/Revenue.csv row 3, column "Amount" (B): expected a number without symbols or separators, got "1,234"`],
    ["$12", 2, `sheets/Revenue.csv row 3, column "Price" (C): expected an amount in EUR as a number without symbols or separators, got "$12"`],
    ["12%", 3, `sheets/Revenue.csv row 3, column "Share" (D): expected a fraction such as 0.125 (for 12.5%) without a % sign, got "12%"`],
    ["2026-02-30", 4, `sheets/Revenue.csv row 3, column "Day" (E): expected a real calendar date as YYYY-MM-DD, got "2026-02-30"`],
    ["ftp://x", 5, `sheets/Revenue.csv row 3, column "Site" (F): expected a complete http:// or https:// address, or an artifact address, got "ftp://x"`],
    ["images/missing.png", 6, `sheets/Revenue.csv row 3, column "Logo" (G): expected the path of an image file in this version, got "images/missing.png"`],
  ])("refuses %j with file, row, column name and letter, and what was expected", async (value, at, message) => {
    const cells = ok.split(",");
    cells[at] = value.includes(",") ? `"${value}"` : value;
    const r = await oneSheet(columns, header + ok + "\n" + cells.join(",") + "\n");
    expect(r.ok).toBe(false);
    expect(r.totalProblems).toBe(1);
    expect(r.problems[0]).toEqual({
      file: "sheets/Revenue.csv",
      row: 3,
      column: ["Name", "Amount", "Price", "Share", "Day", "Site", "Logo"][at],
      columnLetter: "ABCDEFG"[at],
      expected: expect.any(String),
      value,
      message,
    });
  });

  it("refuses every other non-plain number and accepts JSON numbers", async () => {
    const bad = ["+1", ".5", "5.", "007", " 12", "12 ", "1 000", "NaN", "Infinity", "1e999", "0x10", "1e", "-", "1.2.3", "١٢"];
    const good = ["0", "-0", "12", "-12.5", "1e3", "2.5E-4", "1E+2", "0.125", "123456789012345678901234567890"];
    const r = await oneSheet({ N: "number" }, "N\n" + [...bad, ...good].map((x) => `"${x}"`).join("\n") + "\n");
    expect(r.problems.map((p) => p.value)).toEqual(bad);
    expect(r.problems.map((p) => p.row)).toEqual(bad.map((_, i) => i + 2));
  });

  it("any finite double written by JSON.stringify is a plain number; symbols and separators never are", () => {
    fc.assert(fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => isPlainNumber(JSON.stringify(x))));
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 1e9 }), fc.constantFrom("$", "€", "%", ",", " "), (n, sym) =>
        !isPlainNumber(n.toLocaleString("en-US")) && !isPlainNumber(`${sym}${n}`) && !isPlainNumber(`${n}${sym}`),
      ),
    );
  });

  it("dates are real Gregorian calendar days", () => {
    fc.assert(fc.property(fc.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T00:00:00Z"), noInvalidDate: true }), (d) => isCalendarDate(d.toISOString().slice(0, 10))));
    for (const s of ["2026-02-29", "2100-02-29", "2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00", "0000-01-01", "26-01-01", "2026-1-01", "2026/01/01", "2026-01-01T00:00"]) expect(isCalendarDate(s), s).toBe(false);
    for (const s of ["2024-02-29", "2000-02-29", "2026-12-31", "0001-01-01"]) expect(isCalendarDate(s), s).toBe(true);
  });

  it("links are complete http(s) addresses or artifact addresses", () => {
    for (const s of ["https://a.example", "HTTP://A.EXAMPLE/x?y=1#z", "https://[::1]:8080/"]) expect(isWebAddress(s), s).toBe(true);
    for (const s of ["http://", "https://", "http:///x", "https:example.com", "www.example.com", "ftp://x", "https://a b", " https://a.example", "mailto:a@b.c", "http://a:99999/"]) expect(isWebAddress(s), s).toBe(false);
  });

  it("empty cells are allowed in every type; a cell of spaces is not empty", async () => {
    const r = await oneSheet(columns, header + ",,,,,,\n" + "x, ,,,,,\n");
    expect(messages(r)).toEqual([`sheets/Revenue.csv row 3, column "Amount" (B): expected a number without symbols or separators, got " "`]);
  });

  it("letters go past Z and long values are cut to 100 characters", async () => {
    const names = Array.from({ length: 28 }, (_, i) => `c${i + 1}`);
    const long = "x".repeat(300);
    const r = await check({ sheets: [{ name: "W", columns: { c28: "number" } }] }, { "sheets/W.csv": names.join(",") + "\n" + names.map((n) => (n === "c28" ? long : "")).join(",") + "\n" });
    expect(r.problems[0]).toMatchObject({ row: 2, column: "c28", columnLetter: "AB", value: "x".repeat(99) + "…" });
    expect(r.problems[0]!.message).toBe(`sheets/W.csv row 2, column "c28" (AB): expected a number without symbols or separators, got "${"x".repeat(99)}…"`);
    expect([0, 25, 26, 51, 52, 701, 702].map(columnLetter)).toEqual(["A", "Z", "AA", "AZ", "BA", "ZZ", "AAA"]);
    expect(truncate("😀".repeat(150))).toBe("😀".repeat(99) + "…");
  });

  it("rows are records as a spreadsheet numbers them: a quoted cell over several lines is one row", async () => {
    const r = await oneSheet({ N: "number" }, 'T,N\n"a\nb\nc",1\nd,x\n');
    expect(messages(r)).toEqual([`sheets/Revenue.csv row 3, column "N" (B): expected a number without symbols or separators, got "x"`]);
  });
});

describe("CSV structure", () => {
  it("refuses a missing CSV file", async () => {
    const r = await check({ sheets: [{ name: "Revenue" }] }, {});
    expect(r.problems).toEqual([{ file: "sheets/Revenue.csv", expected: "a CSV file", message: `sheets/Revenue.csv: missing; sheet "Revenue" of workbook.json needs this file` }]);
  });

  it("opens exactly sheets/<name>.csv", async () => {
    const r = await check({ sheets: [{ name: "Coûts 2026 (v2)" }] }, { "sheets/Coûts 2026 (v2).csv": "A\n1\n" });
    expect(r.ok).toBe(true);
    const wrongCase = await check({ sheets: [{ name: "Revenue" }] }, { "sheets/revenue.csv": "A\n1\n" });
    expect(messages(wrongCase)).toEqual([`sheets/Revenue.csv: missing; sheet "Revenue" of workbook.json needs this file`]);
  });

  it("refuses an empty file", async () => {
    expect(messages(await oneSheet({}, ""))).toEqual([`sheets/Revenue.csv: the file is empty; row 1 must name the columns`]);
  });

  it("refuses empty and duplicate header names", async () => {
    expect(messages(await oneSheet({}, "A,,B,A\n1,2,3,4\n"))).toEqual([
      `sheets/Revenue.csv row 1, column (B): the header cell is empty; every column needs a name`,
      `sheets/Revenue.csv row 1, column "A" (D): the name is also used by column A; column names must be unique`,
    ]);
  });

  it("refuses rows with another number of cells than the header, and blank lines between rows", async () => {
    expect(messages(await oneSheet({}, "A,B,C\n1,2\n1,2,3,4\n\n1,2,3\n\n"))).toEqual([
      `sheets/Revenue.csv row 2: expected 3 cells (one per header column), got 2`,
      `sheets/Revenue.csv row 3: expected 3 cells (one per header column), got 4`,
      `sheets/Revenue.csv row 4: expected 3 cells (one per header column), got 1 (a blank line)`,
    ]);
  });

  it("refuses broken quoting with the row where reading stopped", async () => {
    const r = await oneSheet({}, 'A,B\n1,2\n3,"x"y\n5,6\n');
    expect(r.problems).toEqual([
      {
        file: "sheets/Revenue.csv",
        row: 3,
        expected: "valid CSV",
        message: `sheets/Revenue.csv row 3: the file is not valid CSV from here on: Invalid Closing Quote: got "y" at line 3 instead of delimiter, record delimiter, trimable character (if activated) or comment`,
      },
    ]);
  });

  it("rejects (does not answer) when the file cannot be read", async () => {
    const failing = () =>
      new Readable({
        read() {
          this.destroy(new Error("disk on fire"));
        },
      });
    await expect(check({ sheets: [{ name: "Revenue" }] }, { "sheets/Revenue.csv": failing })).rejects.toThrow("disk on fire");
  });
});

describe("workbook.json", () => {
  const csv = { "sheets/Revenue.csv": "Month,Amount\n2026-01-01,1\n" };
  it.each([
    [null, "workbook.json: expected a workbook, got null"],
    [{ sheets: [{ name: "Revenue" }], theme: "dark" }, "workbook.json theme: unknown field; a workbook has the fields sheets, charts"],
    [{ sheets: [{}] }, "workbook.json sheets[0].name: is required; expected a sheet name of 1 to 100 characters usable as a file name (no / or \\, no control characters, not . or .., no spaces at either end)"],
    [{ sheets: [{ name: "a/b" }] }, 'workbook.json sheets[0] (sheet "a/b").name: expected a sheet name of 1 to 100 characters usable as a file name (no / or \\, no control characters, not . or .., no spaces at either end), got "a/b"'],
    [{ sheets: [{ name: "Revenue", frozenRows: -1 }] }, 'workbook.json sheets[0] (sheet "Revenue").frozenRows: expected a whole number from 0 to 100001, got -1'],
    [{ sheets: [{ name: "Revenue", frozenColumns: 1.5 }] }, 'workbook.json sheets[0] (sheet "Revenue").frozenColumns: expected a whole number from 0 to 200, got 1.5'],
    [{ sheets: [{ name: "Revenue", widths: [120] }] }, 'workbook.json sheets[0] (sheet "Revenue").widths: expected a map of column name to width in pixels, got a list of 1'],
    [{ sheets: [{ name: "Revenue", widths: { Amount: 0 } }] }, 'workbook.json sheets[0] (sheet "Revenue").widths["Amount"]: expected a whole number from 1 to 2000, got 0'],
    [{ sheets: [{ name: "Revenue", widths: { Amont: 90 } }] }, 'workbook.json sheets[0] (sheet "Revenue").widths["Amont"]: sheets/Revenue.csv has no column "Amont"; its columns are "Month", "Amount"'],
    [{ sheets: [{ name: "Revenue", columns: { Amont: "number" } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amont"]: sheets/Revenue.csv has no column "Amont"; its columns are "Month", "Amount"'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: "money" } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"]: expected a column type (one of text, number, currency, percent, date, link, image) or an object such as { "type": "currency", "currency": "USD" }, got "money"'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: "currency" } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"]: a currency column needs its code: write { "type": "currency", "currency": "USD" }'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: { type: "currency" } } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"].currency: is required; expected an ISO 4217 currency code in capitals, such as USD or EUR'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: { type: "currency", currency: "usd" } } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"].currency: expected an ISO 4217 currency code in capitals, such as USD or EUR, got "usd"'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: { type: "currency", currency: "XYZ" } } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"].currency: expected an ISO 4217 currency code in capitals, such as USD or EUR, got "XYZ"'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: { type: "number", decimals: 2 } } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"].decimals: decimals is only for percent columns'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: { type: "percent", decimals: 11 } } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"].decimals: expected a whole number from 0 to 10, got 11'],
    [{ sheets: [{ name: "Revenue", columns: { Amount: { type: "money" } } }] }, 'workbook.json sheets[0] (sheet "Revenue").columns["Amount"].type: expected one of text, number, currency, percent, date, link, image, got "money"'],
    [{ sheets: [{ name: "Revenue" }, { name: "Revenue" }] }, 'workbook.json sheets[1] (sheet "Revenue").name: "Revenue" is also the name of sheets[0]; sheet names must be unique'],
    [{ sheets: [] }, "workbook.json sheets: a workbook needs at least one sheet"],
  ])("refuses %j", async (workbookJson, message) => {
    const r = await check(workbookJson, csv);
    expect(messages(r)).toEqual([message]);
    expect(r.problems[0]!.file).toBe("workbook.json");
  });

  it("names the column and what was expected in the problem", async () => {
    const r = await check({ sheets: [{ name: "Revenue", columns: { Amount: { type: "currency", currency: "usd" } } }] }, csv);
    expect(r.problems[0]).toMatchObject({ file: "workbook.json", column: "Amount", expected: "an ISO 4217 currency code in capitals, such as USD or EUR", value: "usd" });
  });

  it("reports every broken entry at once and still checks the sound ones", async () => {
    const r = await check(
      { sheets: [{ name: "Revenue", frozenRows: "1", columns: { Amount: "number" } }, { name: "Costs", widths: { X: -1 } }] },
      { ...csv, "sheets/Revenue.csv": "Month,Amount\n2026-01-01,1%\n" },
    );
    expect(messages(r)).toEqual([
      'workbook.json sheets[0] (sheet "Revenue").frozenRows: expected a whole number from 0 to 100001, got "1"',
      'workbook.json sheets[1] (sheet "Costs").widths["X"]: expected a whole number from 1 to 2000, got -1',
      'sheets/Revenue.csv row 2, column "Amount" (B): expected a number without symbols or separators, got "1%"',
      'sheets/Costs.csv: missing; sheet "Costs" of workbook.json needs this file',
    ]);
  });
});

describe("charts", () => {
  const sheet = { name: "Revenue", columns: { Amount: "number", Cost: { type: "currency", currency: "USD" }, Share: "percent" } };
  const csv = "Month,Region,Amount,Cost,Share\n2026-01,North,1,2,0.1\n2026-02,South,3,4,0.2\n";
  const chart = (c: Record<string, unknown>, rows = csv) => check({ sheets: [sheet], charts: [{ name: "Revenue by month", type: "bar", sheet: "Revenue", x: "Month", y: ["Amount"], ...c }] }, { "sheets/Revenue.csv": rows });

  it.each([
    [{ sheet: "Revnue" }, 'workbook.json charts[0] (chart "Revenue by month").sheet: no sheet is named "Revnue"; the sheets are "Revenue"'],
    [{ x: "Mnth" }, 'workbook.json charts[0] (chart "Revenue by month").x: sheet "Revenue" has no column "Mnth"; its columns are "Month", "Region", "Amount", "Cost", "Share"'],
    [{ y: ["Amount", "Profit"] }, 'workbook.json charts[0] (chart "Revenue by month").y[1]: sheet "Revenue" has no column "Profit"; its columns are "Month", "Region", "Amount", "Cost", "Share"'],
    [{ y: ["Region"] }, `workbook.json charts[0] (chart "Revenue by month").y[0]: column "Region" is a text column; a chart's y columns must be number, currency or percent columns`],
    [{ y: ["Amount", "Cost", "Share", "Amount"] }, 'workbook.json charts[0] (chart "Revenue by month").y: lists the column "Amount" more than once'],
    [{ y: ["a", "b", "c", "d", "e", "f"] }, 'workbook.json charts[0] (chart "Revenue by month").y: expected a list of 1 to 5 column names, got a list of 6'],
    [{ y: [] }, 'workbook.json charts[0] (chart "Revenue by month").y: expected a list of 1 to 5 column names, got an empty list'],
    [{ type: "donut" }, 'workbook.json charts[0] (chart "Revenue by month").type: expected bar, line, area or pie, got "donut"'],
    [{ type: "line", stacked: true }, 'workbook.json charts[0] (chart "Revenue by month").stacked: only bar and area charts can be stacked, this is a line chart'],
    [{ type: "pie", stacked: false }, 'workbook.json charts[0] (chart "Revenue by month").stacked: only bar and area charts can be stacked, this is a pie chart'],
    [{ type: "pie", y: ["Amount", "Cost"] }, 'workbook.json charts[0] (chart "Revenue by month").y: expected a list of exactly one column name (a pie chart has one y column), got a list of 2'],
    [{ stacked: "yes" }, 'workbook.json charts[0] (chart "Revenue by month").stacked: expected true or false, got "yes"'],
    [{ x: undefined }, `workbook.json charts[0] (chart "Revenue by month").x: is required; expected the x column's name`],
  ])("refuses %j", async (c, message) => {
    const r = await chart(c);
    expect(messages(r)).toEqual([message]);
    expect(r.charts).toEqual([]);
  });

  it("a pie shows at most 5 rows: 5 pass, 6 are refused", async () => {
    const rows = (n: number) => "Month,Region,Amount,Cost,Share\n" + Array.from({ length: n }, (_, i) => `m${i},r,${i},1,0.1\n`).join("") + "\n\n";
    const five = await chart({ type: "pie" }, rows(5));
    expect(five.problems).toEqual([]);
    expect(five.charts).toEqual([{ name: "Revenue by month", sheet: "Revenue" }]);
    expect(messages(await chart({ type: "pie" }, rows(6)))).toEqual(['workbook.json charts[0] (chart "Revenue by month"): a pie chart shows at most 5 rows; sheet "Revenue" has 6']);
  });

  it("refuses duplicate chart names", async () => {
    const c = { name: "Same", type: "line", sheet: "Revenue", x: "Month", y: ["Amount"] };
    const r = await check({ sheets: [sheet], charts: [c, c] }, { "sheets/Revenue.csv": csv });
    expect(messages(r)).toEqual(['workbook.json charts[1] (chart "Same").name: "Same" is also the name of charts[0]; chart names must be unique']);
    expect(r.charts).toEqual([{ name: "Same", sheet: "Revenue" }]);
  });

  it("still checks the columns of a chart that failed its schema", async () => {
    expect(messages(await chart({ type: "line", stacked: true, y: ["Profit"] }))).toEqual([
      'workbook.json charts[0] (chart "Revenue by month").stacked: only bar and area charts can be stacked, this is a line chart',
      'workbook.json charts[0] (chart "Revenue by month").y[0]: sheet "Revenue" has no column "Profit"; its columns are "Month", "Region", "Amount", "Cost", "Share"',
    ]);
  });
});

describe("limits (spec 8)", () => {
  const sheets = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `S${i + 1}` }));
  const filesFor = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`sheets/S${i + 1}.csv`, "A,B\nx,1\n"]));
  const charts = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `C${i + 1}`, type: "bar", sheet: "S1", x: "A", y: ["A"] }));

  it("20 sheets pass, 21 are refused", async () => {
    expect((await check({ sheets: sheets(20) }, filesFor(20))).problems).toEqual([]);
    expect(messages(await check({ sheets: sheets(21) }, filesFor(21)))).toEqual(["workbook.json sheets: a workbook holds at most 20 sheets, this one has 21"]);
  });

  it("10 charts pass, 11 are refused", async () => {
    const s = [{ name: "S1", columns: { A: "number" } }];
    const f = { "sheets/S1.csv": "A,B\n1,x\n" };
    expect((await check({ sheets: s, charts: charts(10) }, f)).problems).toEqual([]);
    expect(messages(await check({ sheets: s, charts: charts(11) }, f))).toEqual(["workbook.json charts: a workbook holds at most 10 charts, this one has 11"]);
  });

  it("200 columns pass, 201 are refused naming the column", async () => {
    const wide = (n: number) => Array.from({ length: n }, (_, i) => `c${i + 1}`).join(",") + "\n" + Array.from({ length: n }, () => "1").join(",") + "\n";
    expect((await check({ sheets: [{ name: "Wide" }] }, { "sheets/Wide.csv": wide(200) })).problems).toEqual([]);
    const r = await check({ sheets: [{ name: "Wide" }] }, { "sheets/Wide.csv": wide(201) });
    expect(r.problems).toEqual([{ file: "sheets/Wide.csv", row: 1, column: "c201", columnLetter: "GS", expected: "at most 200 columns", message: 'sheets/Wide.csv row 1, column "c201" (GS): a sheet holds at most 200 columns, this file has 201' }]);
  });

  const header = Array.from({ length: 20 }, (_, i) => `c${i + 1}`);
  const columns = { c1: "number", c2: "date", c3: { type: "currency", currency: "USD" }, c4: "percent", c5: "link", c6: "image" };
  const row = (i: number) => `${i},2026-01-${String((i % 28) + 1).padStart(2, "0")},${i}.25,0.${i % 1000},https://example.com/${i},images/logo.png,` + Array.from({ length: 14 }, (_, c) => `t${c}-${i}`).join(",");

  it("a 100,000-row x 20-column sheet passes", async () => {
    const csv = generated(header, 100_000, row);
    const r = await check({ sheets: [{ name: "Big", columns }] }, { "sheets/Big.csv": () => csv.stream });
    expect(r.problems).toEqual([]);
    expect(r.sheets).toEqual([{ name: "Big", columns: header, rows: 100_000 }]);
  });

  it("100,001 rows are refused naming the limit, and reading stops there", async () => {
    const csv = generated(header, 150_000, row);
    const r = await check({ sheets: [{ name: "Big", columns }] }, { "sheets/Big.csv": () => csv.stream });
    expect(r.problems).toEqual([{ file: "sheets/Big.csv", row: 100_002, expected: "at most 100,000 data rows", message: "sheets/Big.csv row 100002: a sheet holds at most 100,000 data rows below the header row; this file has more" }]);
    expect(csv.produced()).toBeLessThan(110_000);
  });
});

describe("problems are capped with the total count", () => {
  const csv = "N\n" + Array.from({ length: 150 }, (_, i) => `bad${i}`).join("\n") + "\n";
  it("lists 100 by default and counts all", async () => {
    const r = await oneSheet({ N: "number" }, csv);
    expect(r.problems).toHaveLength(100);
    expect(r.totalProblems).toBe(150);
    expect(r.problems[99]!.row).toBe(101);
  });
  it("follows maxProblems", async () => {
    const r = await check({ sheets: [{ name: "Revenue", columns: { N: "number" } }] }, { "sheets/Revenue.csv": csv }, { maxProblems: 3 });
    expect(r.problems.map((p) => p.value)).toEqual(["bad0", "bad1", "bad2"]);
    expect(r.totalProblems).toBe(150);
  });
});

