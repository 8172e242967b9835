// The deadlines of one download, as an AbortSignal for fetch: it aborts when nothing arrived for `stallMs` (a
// primary, or a proxy, that keeps the connection open and sends nothing), or when the whole transfer took longer
// than `totalMs` (a body that drips a byte now and then never stalls). Without them a pull could wait forever, and
// the edge with it: pulls run one at a time.

export interface TransferDeadline {
  signal: AbortSignal;
  /** Bytes arrived: the stall deadline starts again. */
  progress(): void;
  /** The transfer is over: no abort after this. */
  done(): void;
}

export function transferDeadline(stallMs: number, totalMs: number): TransferDeadline {
  const controller = new AbortController();
  const abort = (why: string) => controller.abort(new Error(why));
  const stall = setTimeout(() => abort(`the primary sent nothing for ${seconds(stallMs)}`), stallMs);
  const total = setTimeout(() => abort(`the download was not done after ${seconds(totalMs)}`), totalMs);
  return {
    signal: controller.signal,
    progress: () => void stall.refresh(),
    done() {
      clearTimeout(stall);
      clearTimeout(total);
    },
  };
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;
