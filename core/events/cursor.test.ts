/** Stream cursors: the fast encoder answers exactly what Buffer's base64url does, and decodes back. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "./cursor";

describe("encodeCursor", () => {
  it("encodes as base64url of `c1:<epoch>:<seq>` for any epoch and position, and decodes back (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "grapheme-ascii", maxLength: 40 }), fc.string({ maxLength: 12 })), fc.maxSafeNat(), (epoch, seq) => {
        const cursor = encodeCursor(epoch, seq);
        expect(cursor).toBe(Buffer.from(`c1:${epoch}:${seq}`).toString("base64url"));
        // a second call takes the cached prefix
        expect(encodeCursor(epoch, seq)).toBe(cursor);
        if (!epoch.includes(":")) expect(decodeCursor(epoch, cursor)).toBe(seq);
      }),
      { numRuns: 2000 },
    );
  });
});
