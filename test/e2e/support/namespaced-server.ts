// The built executable's `serve` inside a network namespace a test created (so it can answer DNS on port 53 of
// that namespace's loopback, where a mail server's resolver asks), its HTTP API driven with curl run inside the
// same namespace. Its output is collected; it is stopped by its pid.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { NetworkNamespace } from "../../support/netns";
import { cleanEnv, parseFirstStartCredentials, requireBinary, track, type FirstStartCredentials, type Sandbox } from "./binary";

export interface CurlResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

export class NamespacedServer {
  private output = "";

  private constructor(
    readonly ns: NetworkNamespace,
    readonly sandbox: Sandbox,
    readonly port: number,
    private readonly proc: Subprocess<"ignore", "pipe", "pipe">,
  ) {}

  /** `serve --host 127.0.0.1 --port PORT --data-dir DIR ...args` in the namespace, once /readyz answers 200. */
  static async start(ns: NetworkNamespace, sandbox: Sandbox, port: number, args: string[]): Promise<NamespacedServer> {
    const proc = Bun.spawn(ns.command(requireBinary(), ["serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", sandbox.dataDir, ...args]), {
      cwd: sandbox.dir,
      env: cleanEnv(),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    track(proc);
    const server = new NamespacedServer(ns, sandbox, port, proc);
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) server.output += decoder.decode(chunk, { stream: true });
    };
    void collect(proc.stdout);
    void collect(proc.stderr);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) break;
      if ((await server.request("GET", "/readyz")).status === 200) return server;
      await Bun.sleep(100);
    }
    await server.stop();
    throw new Error(`the appliance in the namespace did not become ready within 30 s:\n${server.output}`);
  }

  /** The first admin's credentials, from the file the first start writes. */
  credentials(): FirstStartCredentials {
    const found = parseFirstStartCredentials(readFileSync(join(this.sandbox.dataDir, "initial-credentials.txt"), "utf8"));
    if (found === null) throw new Error(`no first-start credentials:\n${this.output}`);
    return found;
  }

  /** One HTTP request with curl inside the namespace; `json` is sent as the JSON body, `text` as text/plain. */
  async request(method: string, path: string, init: { headers?: Record<string, string>; json?: unknown; text?: string } = {}): Promise<CurlResponse> {
    const args = ["-sS", "-X", method, "-o", "-", "-w", "\n%{http_code}", "--max-time", "15"];
    for (const [name, value] of Object.entries(init.headers ?? {})) args.push("-H", `${name}: ${value}`);
    let input: string | undefined;
    if (init.json !== undefined) {
      args.push("-H", "content-type: application/json", "--data-binary", "@-");
      input = JSON.stringify(init.json);
    } else if (init.text !== undefined) {
      args.push("-H", "content-type: text/plain", "--data-binary", "@-");
      input = init.text;
    }
    // Asynchronous, so a test's other work (and this process's timers) go on while curl waits.
    const proc = Bun.spawn(this.ns.command("curl", [...args, `http://127.0.0.1:${this.port}${path}`]), {
      stdin: input === undefined ? "ignore" : new TextEncoder().encode(input),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    const cut = out.lastIndexOf("\n");
    const status = Number(out.slice(cut + 1));
    const text = out.slice(0, cut);
    if (!status) return { status: 0, body: null, text: err };
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    return { status, body, text };
  }

  log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10_000);
      await this.proc.exited;
      clearTimeout(timer);
    }
  }
}
