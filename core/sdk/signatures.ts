// Signature helpers: written by the signatures helper (see test/signatures.test.ts).
export {};
