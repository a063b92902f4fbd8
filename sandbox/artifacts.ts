/**
 * The sandbox's seeded artifacts (spec 2.7–2.11), owned by `dev`: a sheet with charts, a document that
 * shows the sheet's chart (following the latest version) and a range of it pinned to version 1, and a
 * deck that embeds the chart and links the document. The sheet then gets a version 2, so the pinned and
 * the following addresses show different data. Every address form of the README appears here.
 */
import type { ArtifactsApi } from "../core/sdk";

const MONTHS = [
  ["2026-04-30", 182000, 121000, "https://example.com/reports/2026-04"],
  ["2026-05-31", 191500, 124300, "https://example.com/reports/2026-05"],
  ["2026-06-30", 205200, 130100, "https://example.com/reports/2026-06"],
  ["2026-07-31", 214800, 133900, "https://example.com/reports/2026-07"],
  ["2026-08-31", 209900, 131200, "https://example.com/reports/2026-08"],
  ["2026-09-30", 226400, 137800, "https://example.com/reports/2026-09"],
] as const;

/** The revenue CSV for the first `n` months: raw values only (the reader's locale formats them). */
function revenueCsv(n: number): string {
  const rows = MONTHS.slice(0, n).map(([month, revenue, costs, report]) => [month, revenue, costs, ((revenue - costs) / revenue).toFixed(4), report].join(","));
  return ["Month,Revenue,Costs,Margin,Report", ...rows].join("\n") + "\n";
}

const WORKBOOK = {
  sheets: [
    {
      name: "Revenue",
      frozenRows: 1,
      frozenColumns: 1,
      columns: { Month: "date", Revenue: { type: "currency", currency: "USD" }, Costs: { type: "currency", currency: "USD" }, Margin: { type: "percent", decimals: 1 }, Report: "link" },
    },
  ],
  charts: [
    { name: "Revenue by month", type: "bar", sheet: "Revenue", x: "Month", y: ["Revenue", "Costs"], title: "Revenue and costs by month" },
    { name: "Margin", type: "line", sheet: "Revenue", x: "Month", y: ["Margin"] },
  ],
};

const THEME = { mode: "light", tokens: { "--primary": "oklch(0.55 0.18 255)", "--chart-1": "oklch(0.62 0.17 255)", "--chart-2": "oklch(0.72 0.12 160)", "--font-sans": "Inter, system-ui, sans-serif", "--radius": "10px" } };

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="40" viewBox="0 0 160 40"><rect width="160" height="40" rx="8" fill="#2f5bd3"/><text x="16" y="26" font-family="sans-serif" font-size="16" fill="#fff">Sandbox billing</text></svg>`;

function documentMd(sheet: string): string {
  return `# Q3 billing review

Revenue grew every month of the quarter but one, and margins held near 37%. This review walks through
the numbers, the invoices still open, and what we change for Q4.

![Sandbox billing](images/logo.svg "Sandbox billing, internal")

## Highlights

- Revenue for Q3: **651,100 USD**, up 12% on Q2.
- Margin stayed between 37% and 39%.
- [x] Monthly statements automated
- [ ] Overdue scan tuned for enterprise customers

> [!NOTE]
> The chart below follows the latest version of the revenue sheet; the table after it is pinned to
> version 1, as it was when this review was written.

## Revenue

![Revenue and costs by month](artifact:${sheet}#chart=Revenue%20by%20month)

### By month

![Q2 as first published](artifact:${sheet}@1#Revenue!A1:D4)

| Month | Revenue (USD) | Margin |
|:------|--------------:|-------:|
| July | 214,800 | 37.7% |
| August | 209,900 | 37.5% |
| September | 226,400 | 39.1% |

## Open invoices

Acme's INV-1002 (15,000 USD) waits for approval[^approval]. See [the whole sheet](artifact:${sheet}) or
[its margin chart](artifact:${sheet}#chart=Margin).

[^approval]: Invoices above 5,000 USD need a holder of \`approve:invoice\`.
`;
}

function deckHtml(sheet: string, doc: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Q3 in four slides</title>
<link rel="stylesheet" href="deck.css">
</head>
<body>
<section class="slide title">
  <p class="eyebrow">Sandbox billing</p>
  <h1>Q3 in four slides</h1>
  <p>Revenue, margin and what comes next</p>
</section>
<section class="slide stat">
  <h2>Revenue grew 12%</h2>
  <p class="stat-value">651,100 USD</p>
  <p class="source">Source: <a href="artifact:${sheet}">revenue sheet</a></p>
</section>
<section class="slide chart">
  <h2>Revenue and costs by month</h2>
  <svc-embed src="artifact:${sheet}#chart=Revenue%20by%20month"></svc-embed>
  <p class="source">Follows the latest version of the revenue sheet</p>
</section>
<section class="slide quote">
  <blockquote>Margins held because the monthly statements run themselves now.</blockquote>
  <p class="source">From the <a href="artifact:${doc}#highlights">Q3 review</a></p>
</section>
</body>
</html>
`;
}

const DECK_CSS = `.slide.stat .stat-value { font-size: 96px; font-weight: 700; color: var(--primary); }
.slide.quote blockquote { font-size: 40px; }
`;

/**
 * Publishes the sandbox's artifacts for `owner` through the SDK's artifact operations (as system code).
 * @returns the ids, for logs and tests
 */
export async function seedArtifacts(artifacts: ArtifactsApi, owner: string): Promise<{ sheet: string; document: string; deck: string }> {
  const up = (content: string, name: string, contentType: string) => artifacts.upload(content, { name, contentType });
  const workbook = await up(JSON.stringify(WORKBOOK, null, 2), "workbook.json", "application/json");
  const theme = await up(JSON.stringify(THEME, null, 2), "theme.json", "application/json");
  const sheet = await artifacts.publish({
    kind: "sheet",
    title: "Revenue 2026",
    owner,
    files: [
      { path: "workbook.json", file: workbook },
      { path: "sheets/Revenue.csv", file: await up(revenueCsv(5), "Revenue.csv", "text/csv") },
      { path: "theme.json", file: theme },
    ],
  });
  const sheetId = sheet.artifact.id;
  const document = await artifacts.publish({
    kind: "document",
    title: "Q3 billing review",
    owner,
    files: [
      { path: "document.md", file: await up(documentMd(sheetId), "document.md", "text/markdown") },
      { path: "images/logo.svg", file: await up(LOGO, "logo.svg", "image/svg+xml") },
      { path: "theme.json", file: theme },
    ],
  });
  const deck = await artifacts.publish({
    kind: "slides",
    title: "Q3 in four slides",
    owner,
    files: [
      { path: "index.html", file: await up(deckHtml(sheetId, document.artifact.id), "index.html", "text/html") },
      { path: "deck.css", file: await up(DECK_CSS, "deck.css", "text/css") },
      { path: "theme.json", file: theme },
    ],
  });
  // version 2 of the sheet adds September: the document's chart follows it, its pinned table does not
  await artifacts.publishVersion(sheetId, {
    files: [
      { path: "workbook.json", file: workbook },
      { path: "sheets/Revenue.csv", file: await up(revenueCsv(6), "Revenue.csv", "text/csv") },
      { path: "theme.json", file: theme },
    ],
  });
  return { sheet: sheetId, document: document.artifact.id, deck: deck.artifact.id };
}
