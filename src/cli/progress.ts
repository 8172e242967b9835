// A one-line progress bar redrawn in place on a terminal's stderr: done of total, the rate and the time left.
// Commands show it only when stderr is a terminal; elsewhere they print a one-line summary at the end.

export interface ProgressBar {
  /** `total` null: not known: the count and the rate are shown, no bar and no time left. */
  update(done: number, total: number | null): void;
  /** Prints a line of its own above the bar (a bad row, a warning); the bar is drawn again on the next update. */
  note(line: string): void;
  /** Draws the last figures if they were not drawn yet, and ends the line. */
  done(): void;
}

export function progressBar(unit: string, now: () => number = () => performance.now(), write: (s: string) => void = (s) => process.stderr.write(s)): ProgressBar {
  const width = 30;
  const started = now();
  let shownAt = Number.NEGATIVE_INFINITY;
  let drawn = false;
  let lineLength = 0;
  let pending: [number, number | null] | null = null;
  const draw = (done: number, total: number | null, t: number) => {
    shownAt = t;
    drawn = true;
    pending = null;
    const seconds = (t - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    let line: string;
    if (total === null) {
      line = `${done} ${unit} ${Math.round(rate)}/s`;
    } else {
      const fraction = total === 0 ? 1 : Math.min(1, done / total);
      const filled = Math.round(fraction * width);
      const eta = rate > 0 ? Math.ceil(Math.max(0, total - done) / rate) : 0;
      const percent = String(Math.floor(fraction * 100)).padStart(3);
      line = `[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${percent}% ${done}/${total} ${unit} ${Math.round(rate)}/s ETA ${eta}s`;
    }
    // Padded over the previous line, which may have been longer.
    write(`\r${line.padEnd(lineLength)} `);
    lineLength = line.length;
  };
  return {
    update(done, total) {
      const t = now();
      // At most ten redraws a second, none in the first tenth (no rate yet), and always the last one.
      const last = total !== null && done >= total;
      if (!last && (t - shownAt < 100 || t - started < 100)) {
        pending = [done, total];
        return;
      }
      draw(done, total, t);
    },
    note(text) {
      write(drawn ? `\r${" ".repeat(lineLength + 1)}\r${text}\n` : `${text}\n`);
      shownAt = Number.NEGATIVE_INFINITY;
    },
    done() {
      if (pending) draw(pending[0], pending[1], now());
      if (drawn) write("\n");
    },
  };
}
