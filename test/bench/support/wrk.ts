// Runs wrk pinned to one core with the shared request script and reads back its figures.

import { join } from "node:path";

export interface WrkResult {
  requests: number;
  durationUs: number;
  bytes: number;
  /** Responses that were not 2xx/3xx. */
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  meanUs: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
  perSecond: number;
  /** CPU time (user + system) the server process used per request, when its pid was given. */
  serverCpuUsPerRequest: number | null;
}

export interface WrkRun {
  url: string;
  /** Arguments of wrk-requests.lua after `--`. */
  scriptArgs: string[];
  connections: number;
  seconds: number;
  /** The core wrk is pinned to. */
  core: number;
  /** The server's pid, to measure the CPU time it spent (Linux /proc). */
  serverPid?: number;
  /** Another request script (default WRK_SCRIPT), e.g. WRK_PACED_SCRIPT. */
  script?: string;
}

export const WRK_SCRIPT = join(import.meta.dir, "wrk-requests.lua");
export const WRK_PACED_SCRIPT = join(import.meta.dir, "wrk-paced.lua");

export async function wrkAvailable(): Promise<boolean> {
  try {
    const proc = Bun.spawn(["wrk", "--version"], { stdout: "pipe", stderr: "pipe" });
    await proc.exited;
    return true;
  } catch {
    return false;
  }
}

let ticksPerSecond: number | null = null;

/** CPU time of a process so far, in microseconds (utime + stime from /proc/PID/stat). */
export async function cpuMicros(pid: number): Promise<number> {
  ticksPerSecond ??= Number((await new Response(Bun.spawn(["getconf", "CLK_TCK"], { stdout: "pipe" }).stdout).text()).trim()) || 100;
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / ticksPerSecond;
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  const argv = [
    "taskset", "-c", String(run.core),
    "wrk", "-t1", `-c${run.connections}`, `-d${run.seconds}s`, "--timeout", "5s", "-s", run.script ?? WRK_SCRIPT, run.url, "--", ...run.scriptArgs,
  ];
  const cpuBefore = run.serverPid === undefined ? 0 : await cpuMicros(run.serverPid);
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const cpuAfter = run.serverPid === undefined ? 0 : await cpuMicros(run.serverPid);
  const line = out.split("\n").find((l) => l.startsWith("WRKJSON "));
  if (code !== 0 || line === undefined) throw new Error(`wrk failed (exit ${code}): ${err}\n${out}`);
  const result = JSON.parse(line.slice("WRKJSON ".length)) as WrkResult;
  result.perSecond = result.requests / (result.durationUs / 1e6);
  result.serverCpuUsPerRequest = run.serverPid === undefined ? null : (cpuAfter - cpuBefore) / result.requests;
  return result;
}
