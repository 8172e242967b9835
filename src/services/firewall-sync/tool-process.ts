// `nft` and `ipset` as child processes for a firewall sync: a script written to the tool's stdin as it is made,
// and its failure as an error carrying what the tool said on stderr.

import type { FileSink, Subprocess } from "bun";

export class ToolProcess {
  private broken: Error | null = null;
  private readonly stderr: Promise<string>;

  private constructor(
    readonly argv: string[],
    private readonly proc: Subprocess<"pipe", "ignore", "pipe">,
  ) {
    this.stderr = new Response(proc.stderr).text();
  }

  static start(argv: string[]): ToolProcess {
    return new ToolProcess(argv, Bun.spawn(argv, { stdin: "pipe", stdout: "ignore", stderr: "pipe" }));
  }

  private get stdin(): FileSink {
    return this.proc.stdin;
  }

  /** Queues text for the tool; a tool that has exited makes later writes no-ops (its exit status tells why). */
  write(data: string | Uint8Array): void {
    if (this.broken !== null) return;
    try {
      this.stdin.write(data);
    } catch (error) {
      this.broken = error as Error;
    }
  }

  /** Waits until what was written has gone to the tool (back-pressure for a streamed script). */
  async flush(): Promise<void> {
    if (this.broken !== null) return;
    try {
      await this.stdin.flush();
    } catch (error) {
      this.broken = error as Error;
    }
  }

  /** Ends the script and waits for the tool; throws with its stderr unless it exited 0. */
  async finish(): Promise<void> {
    try {
      await this.stdin.end();
    } catch {
      // It has already exited: its status says why.
    }
    const code = await this.proc.exited;
    if (code !== 0) throw new Error(`${this.argv.join(" ")} failed (exit ${code}): ${oneLine(await this.stderr)}`);
  }

  /** Stops the tool (a script that must not complete); nothing more is sent. */
  async kill(): Promise<void> {
    this.broken ??= new Error("killed");
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}

/** Runs a tool with no input; its exit code and stderr. */
export function runTool(argv: string[]): { code: number; stderr: string } {
  const r = Bun.spawnSync(argv, { stdout: "ignore", stderr: "pipe" });
  return { code: r.exitCode, stderr: r.stderr.toString() };
}

/** A tool's complaint in one line, at most 300 characters. */
export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}...` : flat || "(nothing on stderr)";
}
