// A one-line progress bar redrawn in place on a terminal's stderr: done of total, the rate and the time left.
// Commands show it only when stderr is a terminal; elsewhere they print a one-line summary at the end.

export interface ProgressBar {
  update(done: number, total: number): void;
  done(): void;
}

export function progressBar(unit: string, now: () => number = () => performance.now()): ProgressBar {
  const width = 30;
  const started = now();
  let shownAt = Number.NEGATIVE_INFINITY;
  let drawn = false;
  return {
    update(done, total) {
      const t = now();
      // At most ten redraws a second, and always the last one.
      if (t - shownAt < 100 && done < total) return;
      shownAt = t;
      drawn = true;
      const fraction = total === 0 ? 1 : Math.min(1, done / total);
      const filled = Math.round(fraction * width);
      const seconds = (t - started) / 1000;
      const rate = seconds > 0 ? done / seconds : 0;
      const eta = rate > 0 ? Math.ceil((total - done) / rate) : 0;
      const percent = String(Math.floor(fraction * 100)).padStart(3);
      process.stderr.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${percent}% ${done}/${total} ${unit} ${Math.round(rate)}/s ETA ${eta}s `);
    },
    done() {
      if (drawn) process.stderr.write("\n");
    },
  };
}
