// Debian's dnsperf as the load of a DNS benchmark: one run against a server on 127.0.0.1, pinned to a core, with
// `-v` so every answer's latency is printed (dnsperf itself gives only the mean); the latencies go into a
// histogram of 10 µs buckets as they stream in, and the summary's counts are parsed. The server's CPU time per
// query comes from /proc/PID/stat before and after.

import { cpuMicros } from "./wrk";

export interface DnsperfRun {
  port: number;
  queryFile: string;
  seconds: number;
  core: number;
  /** Outstanding queries (dnsperf -q). */
  outstanding: number;
  /** The server's pid, for its CPU time. */
  serverPid: number;
  /** Queries per second to send at most (dnsperf -Q): a paced run, below saturation, measures latency, not queueing. */
  rate?: number;
}

export interface DnsperfResult {
  sent: number;
  completed: number;
  lost: number;
  perSecond: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
  /** Answers by rcode, from the -v lines. */
  rcodes: Record<string, number>;
  serverCpuUsPerQuery: number;
}

const BUCKET_US = 10;

export async function runDnsperf(run: DnsperfRun): Promise<DnsperfResult> {
  const argv = [
    "taskset", "-c", String(run.core),
    "dnsperf", "-s", "127.0.0.1", "-p", String(run.port), "-d", run.queryFile, "-l", String(run.seconds),
    "-q", String(run.outstanding), "-t", "5", "-v",
    ...(run.rate === undefined ? [] : ["-Q", String(Math.round(run.rate))]),
  ];
  const cpuBefore = await cpuMicros(run.serverPid);
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const histogram = new Float64Array(1 + 5_000_000 / BUCKET_US);
  const rcodes: Record<string, number> = {};
  let answered = 0;
  let maxUs = 0;
  let summary = "";
  let rest = "";
  const decoder = new TextDecoder();
  const take = (line: string) => {
    // `> NOERROR 7.113.0.203.zone A 0.000123`
    if (line.startsWith("> ")) {
      const parts = line.split(" ");
      const us = Number(parts[parts.length - 1]) * 1e6;
      const rcode = parts[1]!;
      rcodes[rcode] = (rcodes[rcode] ?? 0) + 1;
      histogram[Math.min(histogram.length - 1, Math.floor(us / BUCKET_US))]!++;
      answered++;
      if (us > maxUs) maxUs = us;
    } else {
      summary += line + "\n";
    }
  };
  const reading = (async () => {
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
      rest = lines.pop()!;
      for (const line of lines) take(line);
    }
    if (rest) take(rest);
  })();
  const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited, reading]);
  const cpuAfter = await cpuMicros(run.serverPid);
  const count = (label: string) => {
    const m = new RegExp(`${label}:\\s+([0-9.]+)`).exec(summary);
    if (!m) throw new Error(`dnsperf printed no "${label}" (exit ${code}): ${err}\n${summary}`);
    return Number(m[1]);
  };
  const sent = count("Queries sent");
  const completed = count("Queries completed");
  const quantile = (q: number) => {
    const target = q * answered;
    let seen = 0;
    for (let i = 0; i < histogram.length; i++) {
      seen += histogram[i]!;
      if (seen >= target) return (i + 1) * BUCKET_US;
    }
    return maxUs;
  };
  return {
    sent,
    completed,
    lost: count("Queries lost"),
    perSecond: count("Queries per second"),
    p50Us: quantile(0.5),
    p99Us: quantile(0.99),
    maxUs,
    rcodes,
    serverCpuUsPerQuery: (cpuAfter - cpuBefore) / Math.max(1, completed),
  };
}
