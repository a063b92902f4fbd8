/**
 * Cell formatting in the reader's locale (spec 2.8), en-US and de-DE, with Node's full ICU; and the
 * shared chart helpers (style, formatters) and page helpers.
 */
import { describe, expect, it } from "vitest";
import { applyChartStyle, artifactFileUrl, artifactPageHref, columnLetters, formatCell, withChartFormatters, type CellType } from "./format";

/** Intl separates with no-break spaces (U+00A0, U+202F): compare with plain ones. */
const text = (raw: string, type: CellType, locale: string) => formatCell(raw, type, locale).text.replace(/\s/g, " ");
const USD: CellType = { type: "currency", currency: "USD" };

describe("formatCell (spec 2.8)", () => {
  it("formats numbers with the locale's separators, keeping every fraction digit", () => {
    expect(text("1234.5", { type: "number" }, "en-US")).toBe("1,234.5");
    expect(text("1234.5", { type: "number" }, "de-DE")).toBe("1.234,5");
    expect(text("-0.125", { type: "number" }, "de-DE")).toBe("-0,125");
    expect(text("1e3", { type: "number" }, "en-US")).toBe("1,000");
    expect(text("0.123456789012345678", { type: "number" }, "en-US")).toBe("0.123456789012345678");
    expect(formatCell("1", { type: "number" }, "en-US").align).toBe("end");
  });

  it("shows currency with its code, in the currency's fraction digits", () => {
    expect(text("214800", USD, "en-US")).toBe("USD 214,800.00");
    expect(text("214800", USD, "de-DE")).toBe("214.800,00 USD");
    expect(text("1234.5", { type: "currency", currency: "EUR" }, "de-DE")).toBe("1.234,50 EUR");
    expect(text("1234", { type: "currency", currency: "JPY" }, "en-US")).toBe("JPY 1,234");
    expect(formatCell("1", USD, "de-DE").align).toBe("end");
  });

  it("shows percent as the fraction times 100 with exactly `decimals` digits (default 0)", () => {
    expect(text("0.125", { type: "percent", decimals: 1 }, "en-US")).toBe("12.5%");
    expect(text("0.125", { type: "percent", decimals: 1 }, "de-DE")).toBe("12,5 %");
    expect(text("0.4", { type: "percent" }, "en-US")).toBe("40%");
    expect(text("0.4", { type: "percent", decimals: 2 }, "en-US")).toBe("40.00%");
    expect(text("0.12345", { type: "percent" }, "de-DE")).toBe("12 %");
  });

  it("shows dates in the medium style, read in UTC", () => {
    expect(text("2026-07-31", { type: "date" }, "en-US")).toBe("Jul 31, 2026");
    expect(text("2026-07-31", { type: "date" }, "de-DE")).toBe("31.07.2026");
    expect(text("2024-02-29", { type: "date" }, "en-US")).toBe("Feb 29, 2024");
    expect(formatCell("2026-07-31", { type: "date" }, "en-US").align).toBe("start");
  });

  it("marks web links, artifact addresses and images", () => {
    expect(formatCell("https://example.com/a", { type: "link" }, "en-US")).toEqual({ text: "https://example.com/a", align: "start", href: "https://example.com/a" });
    expect(formatCell("artifact:art_1@2#Revenue", { type: "link" }, "de-DE")).toEqual({ text: "artifact:art_1@2#Revenue", align: "start", address: "artifact:art_1@2#Revenue" });
    expect(formatCell("images/logo.png", { type: "image" }, "en-US")).toEqual({ text: "images/logo.png", align: "start", image: "images/logo.png" });
    expect(formatCell("plain words", { type: "text" }, "de-DE")).toEqual({ text: "plain words", align: "start" });
  });

  it("answers empty text for an empty cell, aligned as its column", () => {
    for (const locale of ["en-US", "de-DE"]) {
      expect(formatCell("", USD, locale)).toEqual({ text: "", align: "end" });
      expect(formatCell("", { type: "date" }, locale)).toEqual({ text: "", align: "start" });
      expect(formatCell("", { type: "link" }, locale)).toEqual({ text: "", align: "start" });
    }
  });

  it("shows an invalid value as written, and formats an unknown locale as en-US", () => {
    expect(text("12x", { type: "number" }, "en-US")).toBe("12x");
    expect(text("2026-02-30x", { type: "date" }, "en-US")).toBe("2026-02-30x");
    expect(text("1234.5", { type: "number" }, "not a locale!")).toBe("1,234.5");
  });
});

describe("page helpers", () => {
  it("links artifact addresses to the pages and image paths to the files API", () => {
    expect(artifactPageHref("artifact:art_01AB@3#chart=Revenue%20by%20month")).toBe("/artifacts/art_01AB?v=3&part=chart%3DRevenue%20by%20month");
    expect(artifactPageHref("artifact:art_01AB")).toBe("/artifacts/art_01AB");
    expect(artifactPageHref("https://example.com")).toBeUndefined();
    expect(artifactFileUrl("art_1", 2, "images/a b.png")).toBe("/api/artifacts/art_1/versions/2/files/images/a%20b.png");
    expect([0, 25, 26, 199].map(columnLetters)).toEqual(["A", "Z", "AA", "GR"]);
  });
});

describe("chart helpers", () => {
  const option = {
    title: { text: "T" },
    xAxis: { type: "category", data: ["a"] },
    yAxis: { type: "value" },
    series: [{ type: "bar", data: [1] }],
    tooltip: {},
    svcFormats: { locale: "de-DE", axis: USD, series: [USD] },
  };
  const style = { palette: ["#111111", "#222222", "#333333", "#444444", "#555555"], foreground: "#000000", muted: "#666666", border: "#dddddd", background: "#ffffff", fontFamily: '"Inter", sans-serif' };

  it("writes the style into the option, font quotes made single", () => {
    const out = applyChartStyle(option, style) as any;
    expect(out.color).toEqual(style.palette);
    expect(out.textStyle).toEqual({ fontFamily: "'Inter', sans-serif", color: "#000000" });
    expect(out.xAxis[0].axisLabel.color).toBe("#666666");
    expect(out.yAxis[0].splitLine.lineStyle.color).toBe("#dddddd");
    expect(out.tooltip.backgroundColor).toBe("#ffffff");
    expect(option).not.toHaveProperty("color"); // the input is not changed
  });

  it("adds axis and tooltip formatters from the option's formats", () => {
    const out = withChartFormatters(option) as any;
    expect(out.yAxis[0].axisLabel.formatter(2_500_000).replace(/\s/g, " ")).toBe("2,5 Mio. USD");
    expect(out.series[0].tooltip.valueFormatter(214800).replace(/\s/g, " ")).toBe("214.800,00 USD");
    expect(out.series[0].tooltip.valueFormatter(null)).toBe("–");
    expect((withChartFormatters(option, "en-US") as any).series[0].tooltip.valueFormatter(5).replace(/\s/g, " ")).toBe("USD 5.00");
    expect(withChartFormatters({ series: [] })).toEqual({ series: [] });
  });
});
