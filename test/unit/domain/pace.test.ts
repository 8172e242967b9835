// Pace ends a step after its units; TimedPace also after its time budget (read from the timer it is given),
// counting a step's time from its first unit, so the turn between two steps is not charged to the next.

import { expect, test } from "bun:test";
import { Pace, TimedPace } from "../../../src/domain/pace";

/** The number of units each step held, spending one unit at a time; `tick` runs before each unit. */
function stepsOf(pace: Pace, units: number, tick: (unit: number) => void = () => {}): number[] {
  const steps: number[] = [];
  let inStep = 0;
  for (let unit = 0; unit < units; unit++) {
    tick(unit);
    inStep++;
    if (pace.spend()) {
      steps.push(inStep);
      inStep = 0;
    }
  }
  if (inStep > 0) steps.push(inStep);
  return steps;
}

test("a Pace ends a step every `step` units", () => {
  expect(stepsOf(new Pace(100), 250)).toEqual([100, 100, 50]);
  expect(stepsOf(new Pace(Infinity), 250)).toEqual([250]);
});

test("a TimedPace on a fast machine ends its steps by units, as a Pace does", () => {
  let now = 0;
  const pace = new TimedPace(100, 5, () => now);
  expect(stepsOf(pace, 250, () => (now += 0.001))).toEqual([100, 100, 50]);
});

test("a TimedPace on a slow machine ends a step once its budget has passed (checked every 64 units)", () => {
  let now = 0;
  const pace = new TimedPace(8192, 5, () => now);
  // 0.05 ms a unit: the budget of 5 ms is passed at 100 units, seen at the next check (128).
  const steps = stepsOf(pace, 1000, () => (now += 0.05));
  expect(steps.slice(0, -1).every((units) => units === 128)).toBe(true);
  expect(steps.reduce((a, b) => a + b, 0)).toBe(1000);
});

test("the time between two steps (the event loop's turn) is not charged to the next step", () => {
  let now = 0;
  const pace = new TimedPace(100, 5, () => now);
  let inStep = 0;
  const steps: number[] = [];
  for (let unit = 0; unit < 300; unit++) {
    inStep++;
    if (pace.spend()) {
      steps.push(inStep);
      inStep = 0;
      now += 50; // a long turn of requests before the next step starts
    }
  }
  expect(steps).toEqual([100, 100, 100]);
});
