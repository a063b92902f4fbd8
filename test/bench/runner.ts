/**
 * The handler runner in process, without HTTP (issue 15): main-thread CPU per handler run and per
 * action run, and the bytes an action run allocates, measured inside the compiled app
 * (./runner-probe.ts; `BENCH_APP=tsx` runs the sources). The yardstick of the same run is a direct call
 * of the same noop handler with a context of the same fields. Rows without goals: these are the
 * figures to compare before and after a change to the runner, steadier than the HTTP rows of run.ts.
 */
import os from "node:os";
import { reportRows } from "./report";
import { BENCH_APP, runRunnerProbe } from "./server-process";

console.log(`\nsvc bench runner: the handler runner in process, node ${process.version}, ${os.cpus().length} cores, servers ${BENCH_APP} (BENCH_APP)\n`);
const f = await runRunnerProbe();
const us = (n: number) => `${n.toFixed(1)} µs`;
console.log(`| case | ${f.clock} CPU |`);
console.log("|---|---:|");
console.log(`| noop handler called directly (the yardstick) | ${us(f.directCallUs)} |`);
console.log(`| HandlerRunner.execute, noop handler | ${us(f.executeUs)} |`);
console.log(`| ActionRunner.run, diagnostics.noop, 16 at a time, per run | ${us(f.actionRunUs)} (all threads ${us(f.actionRunAllThreadsUs)}) |`);
console.log(`| allocated per action run (garbage included) | ${f.allocatedKiB.toFixed(1)} KiB |`);
console.log(`\nwhich functions allocate an action run's ${f.allocatedKiB.toFixed(1)} KiB (V8's sampling heap profiler; functions of the compiled bundle, KiB per run):`);
for (const { site, kib } of f.allocatingFunctions) console.log(`  ${kib.toFixed(2).padStart(6)}  ${site}`);
reportRows("runner", [
  { case: "HandlerRunner.execute, noop handler", now: `${us(f.executeUs)} of ${f.clock} CPU (direct call ${us(f.directCallUs)})`, goal: "-", met: null },
  { case: "ActionRunner.run, diagnostics.noop, 16 at a time", now: `${us(f.actionRunUs)} of ${f.clock} CPU per run (all threads ${us(f.actionRunAllThreadsUs)}); ${f.allocatedKiB.toFixed(1)} KiB allocated`, goal: "-", met: null },
]);
