// One DNS question over UDP to a server on 127.0.0.1, for a benchmark's checks between its timed runs: the
// answer's rcode and how many answer records it holds (header fields only; nothing else is decoded). And a port
// free for both UDP and TCP, for a DNS server the benchmark starts.

import { createSocket } from "node:dgram";
import { createServer } from "node:net";

export const TYPE_A = 1;
export const TYPE_SOA = 6;

export interface ProbeAnswer {
  rcode: number;
  answers: number;
  /** The whole response, for a caller that decodes more. */
  bytes: Buffer;
}

/** Asks `name` (type `type`, class IN) once; rejects after `timeoutMs`. */
export function probe(port: number, name: string, type = TYPE_A, timeoutMs = 2000): Promise<ProbeAnswer> {
  const id = Math.floor(Math.random() * 0x10000);
  const labels = name.split(".").filter((l) => l.length > 0);
  const question = Buffer.concat([
    ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, "ascii")])),
    Buffer.from([0, type >> 8, type & 0xff, 0, 1]),
  ]);
  // id, flags 0 (a plain query, recursion not desired), one question.
  const header = Buffer.from([id >> 8, id & 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
  const socket = createSocket("udp4");
  return new Promise<ProbeAnswer>((resolve, reject) => {
    const timer = setTimeout(() => finish(() => reject(new Error(`no DNS answer for ${name} from 127.0.0.1:${port} within ${timeoutMs} ms`))), timeoutMs);
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      socket.close();
      settle();
    };
    socket.on("message", (msg) => {
      if (msg.length < 12 || msg.readUInt16BE(0) !== id) return;
      finish(() => resolve({ rcode: msg[3]! & 0x0f, answers: msg.readUInt16BE(6), bytes: msg }));
    });
    socket.on("error", (error) => finish(() => reject(error)));
    socket.send(Buffer.concat([header, question]), port, "127.0.0.1");
  });
}

/** Waits until the server answers a question, for at most `timeoutMs` (it may be loading its zone); fails at once if it exits. */
export async function waitForDns(port: number, name: string, server: { what: string; proc: { exitCode: number | null } }, timeoutMs = 300_000): Promise<void> {
  const { what, proc } = server;
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${what} exited (code ${proc.exitCode}) before answering DNS on 127.0.0.1:${port}`);
    try {
      await probe(port, name, TYPE_A, 5000);
      return;
    } catch (error) {
      last = String(error);
    }
    await Bun.sleep(200);
  }
  throw new Error(`${what} did not answer DNS on 127.0.0.1:${port} within ${timeoutMs} ms (${last})`);
}

/** A port on 127.0.0.1 that is free for both UDP and TCP right now. */
export async function freeDnsPort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const udp = createSocket("udp4");
    const port = await new Promise<number>((resolve, reject) => {
      udp.once("error", reject);
      udp.bind(0, "127.0.0.1", () => resolve(udp.address().port));
    });
    const tcp = createServer();
    const tcpFree = await new Promise<boolean>((resolve) => {
      tcp.once("error", () => resolve(false));
      tcp.listen(port, "127.0.0.1", () => resolve(true));
    });
    await new Promise<void>((resolve) => (tcpFree ? tcp.close(() => resolve()) : resolve()));
    udp.close();
    if (tcpFree) return port;
  }
  throw new Error("no port free for both UDP and TCP on 127.0.0.1");
}
