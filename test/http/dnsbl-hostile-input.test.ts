// Hostile input never stops the DNS listener (contract 17): fast-check makes batches of random bytes and of real
// queries (encoded by dns-packet) with bytes flipped, cut or spliced, sends them over the real UDP socket and as
// TCP streams, and after every batch a normal query must still get its right answer.

import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import dnsPacket from "dns-packet";
import fc from "fast-check";
import { createDnsHarness, type DnsHarness, ipv4Name, putInIndex, rawTcpClient, rawUdpClient, TEST_ZONE, withLength } from "../support/dns";

// Each test runs dig or a process several times: room for a loaded machine (bun's default is 5 s).
setDefaultTimeout(60_000);

let d: DnsHarness;
const LISTED = "198.51.100.9";

const query = (name: string, type: dnsPacket.RecordType, id: number, edns: boolean) =>
  Uint8Array.from(
    dnsPacket.encode({
      type: "query",
      id,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ type, name, class: "IN" }],
      additionals: edns ? [{ type: "OPT", name: ".", udpPayloadSize: 1232 }] : [],
    } as dnsPacket.Packet),
  );

const names = fc.constantFrom(ipv4Name(LISTED), ipv4Name("203.0.113.1"), `2.0.0.127.${TEST_ZONE}`, TEST_ZONE, `ns.${TEST_ZONE}`, "example.com");
const types = fc.constantFrom(...(["A", "TXT", "AAAA", "SOA", "NS", "ANY", "MX"] as dnsPacket.RecordType[]));
const validQuery = fc.record({ name: names, type: types, id: fc.integer({ min: 0, max: 65535 }), edns: fc.boolean() }).map((q) => query(q.name, q.type, q.id, q.edns));

/** A real query with some bytes changed, cut short, or followed by junk. */
const mutated = fc
  .tuple(validQuery, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }), fc.option(fc.nat()), fc.uint8Array({ maxLength: 8 }))
  .map(([packet, flips, cut, tail]) => {
    const out = Uint8Array.from(packet);
    for (const [at, value] of flips) out[at % out.length] = value;
    const kept = cut === null ? out : out.subarray(0, cut % (out.length + 1));
    const joined = new Uint8Array(kept.length + tail.length);
    joined.set(kept, 0);
    joined.set(tail, kept.length);
    return joined;
  });
const randomBytes = fc.uint8Array({ maxLength: 600 });
/** A 12-byte header that says one question, then random bytes: gets deep into the name reader. */
const headerThenJunk = fc.uint8Array({ minLength: 0, maxLength: 300 }).map((junk) => Uint8Array.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, ...junk]));
const hostile = fc.oneof(randomBytes, mutated, headerThenJunk);

beforeAll(async () => {
  d = await createDnsHarness();
  putInIndex(d, LISTED, { reputationScore: 10, totalReports: 3, categoriesMask: 1 });
}, 60_000);

afterAll(async () => {
  await d?.close();
}, 60_000);

/** The normal query's answer: the listed address's five A records. */
async function answersNormally(): Promise<void> {
  const client = await rawUdpClient(d.port);
  try {
    const id = 31337;
    client.send(query(ipv4Name(LISTED), "A", id, false));
    // Answers to the batch may still be on their way: the one with our id is the one to check.
    for (;;) {
      const answer = await client.next(10_000);
      expect(answer).not.toBeNull();
      const decoded = dnsPacket.decode(Buffer.from(answer!)) as dnsPacket.DecodedPacket & { rcode: string };
      if (decoded.id !== id) continue;
      expect(decoded.rcode).toBe("NOERROR");
      expect((decoded.answers ?? []).map((a) => (a as { data: unknown }).data)).toEqual(["127.0.0.2", "127.0.1.10", "127.0.1.11", "127.0.1.12", "127.0.2.4"]);
      return;
    }
  } finally {
    client.close();
  }
}

test("random and mutated packets over UDP: the listener answers a normal query after each batch", async () => {
  const client = await rawUdpClient(d.port);
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 50, maxLength: 100 }), async (batch) => {
        for (const packet of batch) client.send(packet);
        await answersNormally();
      }),
      { numRuns: 25 },
    );
  } finally {
    client.close();
  }
}, 120_000);

test("random and mutated messages over TCP, framed or not: the listener answers a normal query after each batch", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(hostile, fc.boolean()), { minLength: 10, maxLength: 40 }), async (batch) => {
      const c = await rawTcpClient(d.port);
      for (const [packet, frame] of batch) c.write(frame ? withLength(packet) : packet);
      c.end();
      await answersNormally();
      const fresh = await rawTcpClient(d.port);
      fresh.write(withLength(query(`2.0.0.127.${TEST_ZONE}`, "A", 9, false)));
      const [answer] = await fresh.messages(1);
      expect(dnsPacket.decode(Buffer.from(answer)).id).toBe(9);
      fresh.end();
    }),
    { numRuns: 15 },
  );
}, 120_000);
