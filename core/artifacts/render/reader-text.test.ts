/**
 * Messages in the reader's words (render/reader-text.ts): artifacts by title or in neutral words, never by id.
 */
import { describe, expect, it } from "vitest";
import { describeAddressPart, withoutArtifactIds } from "./reader-text";

describe("withoutArtifactIds", () => {
  const name = (id: string) => (id === "art_01ABC" ? "“Revenue 2026”" : "another artifact");

  it("replaces each id, with the word artifact before it, by what the reader may call it", () => {
    expect(withoutArtifactIds('artifact art_01ABC has no chart "Gone"; its charts are: Trend', name)).toBe('“Revenue 2026” has no chart "Gone"; its charts are: Trend');
    expect(withoutArtifactIds("Artifact art_01ABC has no version 7; latest is 2", () => "this artifact")).toBe("This artifact has no version 7; latest is 2");
    expect(withoutArtifactIds("Version 3 of art_01ABC has no file \"a.png\"", name)).toBe("Version 3 of “Revenue 2026” has no file \"a.png\"");
    expect(withoutArtifactIds("Artifact art_09XYZ shows it", name)).toBe("Another artifact shows it");
    expect(withoutArtifactIds("artifact art_09XYZ shows it", name, { midSentence: true })).toBe("another artifact shows it");
  });

  it("leaves addresses and words that only look alike", () => {
    expect(withoutArtifactIds("see artifact:art_01ABC#chart=Trend", name)).toBe("see artifact:art_01ABC#chart=Trend");
    expect(withoutArtifactIds("start_art_01 is no id", name)).toBe("start_art_01 is no id");
    // a path is not a sentence: /artifacts/art_… stays (it read "/artifacts/another artifact")
    expect(withoutArtifactIds("open /artifacts/art_01ABC?v=2", name)).toBe("open /artifacts/art_01ABC?v=2");
  });

  it("replaces a \"the artifact\" before an id with the name too (it read \"the another artifact\")", () => {
    expect(withoutArtifactIds("the artifact art_09XYZ was withdrawn", name, { midSentence: true })).toBe("another artifact was withdrawn");
    expect(withoutArtifactIds("The artifact art_01ABC was withdrawn", name)).toBe("“Revenue 2026” was withdrawn");
  });
});

describe("describeAddressPart", () => {
  it("says what an address shows without its artifact", () => {
    expect(describeAddressPart("artifact:art_1#chart=Revenue%20by%20month")).toBe("chart “Revenue by month”");
    expect(describeAddressPart("artifact:art_1#Revenue!A1:B4")).toBe("range Revenue!A1:B4");
    expect(describeAddressPart("artifact:art_1#highlights")).toBe("“highlights”");
    expect(describeAddressPart("artifact:art_1/images/logo.svg")).toBe("file “images/logo.svg”");
    expect(describeAddressPart("artifact:art_1@2#chart=Trend")).toBe("chart “Trend” of version 2");
    expect(describeAddressPart("artifact:art_1@2")).toBe("version 2");
    expect(describeAddressPart("artifact:art_1")).toBe("the whole artifact");
    expect(describeAddressPart("not an address")).toBe("something");
  });
});
