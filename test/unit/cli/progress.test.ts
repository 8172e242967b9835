// The progress bar's lines as a terminal receives them, on a manual clock: rows, rate and time left, at most ten
// redraws a second, the last figures always drawn, a note printed above the bar.

import { expect, test } from "bun:test";
import { progressBar } from "../../../src/cli/progress";

function bar(unit: string) {
  let t = 0;
  const out: string[] = [];
  const b = progressBar(unit, () => t, (s) => out.push(s));
  return { b, out, at: (ms: number) => (t = ms) };
}

test("done of total with rate and time left; throttled to ten a second; the last one always drawn", () => {
  const { b, out, at } = bar("rows");
  at(50);
  b.update(100, 1_000); // in the first tenth of a second: no rate yet
  at(500);
  b.update(500, 1_000);
  at(550);
  b.update(550, 1_000); // within 100 ms of the last draw
  at(1_000);
  b.update(1_000, 1_000);
  b.done();
  expect(out).toEqual([
    `\r[###############               ]  50% 500/1000 rows 1000/s ETA 1s `,
    `\r[##############################] 100% 1000/1000 rows 1000/s ETA 0s `,
    "\n",
  ]);
});

test("an unknown total shows the count and the rate; done() draws figures an update skipped; a note goes above", () => {
  const { b, out, at } = bar("addresses rescored");
  at(200);
  b.update(400, null);
  at(250);
  b.update(450, null);
  b.note("line 7: bad");
  at(400);
  b.update(800, null);
  at(420);
  b.update(840, null);
  b.done();
  expect(out).toEqual([
    "\r400 addresses rescored 2000/s ",
    `\r${" ".repeat(30)}\rline 7: bad\n`,
    "\r800 addresses rescored 2000/s ",
    "\r840 addresses rescored 2000/s ",
    "\n",
  ]);
});
