/**
 * The open-loop pacing the benchmarks share (test/bench/run.ts's half-load rows, startup.ts's soak,
 * streams.ts's paced fan-out, event-schedules.ts's offered load): sends at evenly spaced instants,
 * whatever the answers do, so that a slow server meets the load it was offered instead of slowing
 * the generator down (no coordinated omission).
 */

import { setTimeout as sleep } from "node:timers/promises";

/** One send of {@link pacedSends}. */
export interface PacedSend {
  /** The send's index, from 0. */
  i: number;
  /**
   * The instant its latency counts from (`performance.now()` ms): its intended instant, or the actual
   * send when the loop sends up to 1 ms early (a wait under 1 ms is not slept: the timer's granularity
   * would make the send late instead).
   * A send the loop makes late is charged its lateness; one made early is not credited the head start.
   */
  from: number;
  /** How late the loop is at this send (ms, 0 when on time or early). */
  late: number;
}

/**
 * Yields `total` sends, `rate` per second, evenly spaced from the first call: the k-th is due
 * `k × 1000 / rate` ms after it. The loop body runs at each send's instant, so it must start its
 * request without awaiting the answer (keep the promise), or the sends fall behind.
 * @param rate sends per second (> 0)
 * @param total how many sends
 */
export async function* pacedSends(rate: number, total: number): AsyncGenerator<PacedSend> {
  const interval = 1000 / rate;
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const now = performance.now();
    yield { i, from: Math.max(due, now), late: Math.max(0, now - due) };
  }
}
