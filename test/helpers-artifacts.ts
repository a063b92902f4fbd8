import { expect } from "vitest";
import { AddressError } from "../core/artifacts/address-error";

/** The `AddressError` `fn` throws (fails the test when it throws nothing or something else). */
export function refusal(fn: () => unknown): AddressError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AddressError);
    return err as AddressError;
  }
  throw new Error("expected an AddressError, nothing was thrown");
}

/** A one-cell range (0-based column, 1-based row). */
export const cell = (column: number, row: number) => ({ start: { column, row }, end: { column, row } });
/** A block of cells from (c1, r1) to (c2, r2). */
export const block = (c1: number, r1: number, c2: number, r2: number) => ({ start: { column: c1, row: r1 }, end: { column: c2, row: r2 } });
/** Whole columns c1 to c2. */
export const cols = (c1: number, c2: number) => ({ start: { column: c1 }, end: { column: c2 } });
