import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseIp } from "../../../../src/domain/ip";
import { DAY_MS } from "../../../../src/domain/scoring";
import { NOT_FOUND } from "../../../../src/index/radix-common";
import { contentHash, contentHashInSteps, META } from "../../../../src/store/snapshot-format";
import { Pace } from "../../../../src/domain/pace";
import { indexFromRows } from "../../../../src/services/snapshots/index-blobs";
import { writeKeyPair } from "../../../../src/services/snapshots/signing";
import { openDataDirectory, openSnapshot } from "../../../../src/services/snapshots/sources";
import { exportSnapshot, snapshotInfo, verifySnapshot } from "../../../../src/services/snapshots/export";
import { openMemoryStore } from "../../../../src/store/database";
import { addUser, type TestUser } from "../../../support/accounts";
import { bodyOf, createHarness, type Harness } from "../../../support/harness";

let h: Harness;
let dir: string;
let reporters: TestUser[];
let admin: TestUser;
let keys: { privatePath: string; publicPath: string };
let otherKeys: { privatePath: string; publicPath: string };
let signedFile: string;

const WEBHOOK_SECRET = "whsec-snapshot-test-0123456789abcdef";
const ALLOW_NOTE = "note written by allow-owner@example.test";
const descriptionOf = (i: number) => `description-text-${i}-ssh brute force from my honeypot`;
const evidenceOf = (i: number) => `evidence-log-line-${i}: Failed password for root`;

/** Addresses reported below; a third of them by three reporters (verified), one in 198.51.100.0/24 bursts. */
const reported = [
  "203.0.113.7",
  "198.51.100.1",
  "198.51.100.2",
  "198.51.100.3",
  "198.51.100.4",
  "198.51.100.5",
  "8.8.4.4",
  "2001:db8::42",
  "2a00:1450:4001:80b::200e",
];
const unreported = ["8.8.8.8", "10.1.2.3", "2001:db8::1", "1.1.1.1"];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-snapshots-"));
  h = await createHarness();
  reporters = [];
  for (let i = 0; i < 3; i++) reporters.push(await addUser(h, { tier: "enterprise", email: `reporter${i}@snapshot.example.test` }));
  admin = await addUser(h, { tier: "enterprise", role: "admin", email: "admin-snap@snapshot.example.test" });
  let n = 0;
  for (const [i, ip] of reported.entries()) {
    const who = i % 3 === 0 ? reporters : [reporters[i % 3]];
    for (const r of who) {
      const res = await h.call("POST", "/v1/ip/report", {
        headers: r.jwt,
        json: { ip, category: i % 2 === 0 ? "ssh" : "port-scan", severity: 1 + (i % 5), description: descriptionOf(n), evidence: evidenceOf(n) },
      });
      expect(res.status).toBe(201);
      n++;
    }
    h.clock.advance(60_000);
  }
  h.services.reportStates.verifyCommunity(h.clock.now());
  await h.services.threats.detect(h.clock.now());
  h.services.allowlist.add("8.8.4.0/24", ALLOW_NOTE, admin.user.id);
  const hook = await h.call("POST", "/v1/webhooks", { headers: reporters[0].jwt, json: { url: "http://127.0.0.1:9/hook", events: ["ip.reported"], secret: WEBHOOK_SECRET } });
  expect(hook.status).toBe(201);
  keys = writeKeyPair(join(dir, "signing"));
  otherKeys = writeKeyPair(join(dir, "other"));
  signedFile = join(dir, "signed.sqlite");
  await exportSnapshot({ store: h.store, services: h.services, out: signedFile, signKey: keys.privatePath, nowMs: h.clock.now() });
});

afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every secret or personal value the main database holds, as it is stored there. */
function secretsOf(): string[] {
  const q = (sql: string) => (h.store.sqlite.query(sql).values() as unknown[][]).map((r) => String(r[0]));
  const secrets = [
    ...q("SELECT email FROM users"),
    ...q("SELECT password_hash FROM users"),
    ...q("SELECT key_hash FROM api_keys"),
    ...q("SELECT prefix FROM api_keys"),
    ...q("SELECT secret FROM webhooks"),
    ...q("SELECT url FROM webhooks"),
    ...q("SELECT description FROM reports WHERE description <> ''"),
    ...q("SELECT evidence FROM reports WHERE evidence IS NOT NULL"),
    ...q("SELECT note FROM allowlist WHERE note <> ''"),
    ...reporters.map((r) => r.key),
    admin.key,
    h.services.config.jwtSecret!,
  ];
  // Guard the test itself: every kind of secret is really there to be looked for.
  expect(secrets).toContain(WEBHOOK_SECRET);
  expect(secrets).toContain(ALLOW_NOTE);
  expect(secrets).toContain(descriptionOf(0));
  expect(secrets).toContain(evidenceOf(0));
  expect(secrets.filter((s) => s.includes("@snapshot.example.test")).length).toBe(4);
  expect(secrets.filter((s) => s.startsWith("$argon2id$")).length).toBeGreaterThanOrEqual(4);
  return secrets;
}

describe("export", () => {
  test("no password hash, key hash, key, webhook secret, email, report text or note in any table of the file", () => {
    const secrets = secretsOf();
    const db = new Database(signedFile, { readonly: true });
    const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
    expect(tables.sort()).toEqual(["addresses", "allowlist", "feed_entries", "feeds", "index_data", "meta", "range_tables", "threats"]);
    let values = 0;
    for (const table of tables) {
      for (const row of db.query(`SELECT * FROM "${table}"`).values() as unknown[][]) {
        for (const value of row) {
          if (typeof value === "string") {
            values++;
            for (const secret of secrets) expect(value.includes(secret)).toBe(false);
          } else if (value instanceof Uint8Array) {
            values++;
            const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
            for (const secret of secrets) expect(bytes.includes(secret)).toBe(false);
          }
        }
      }
    }
    expect(values).toBeGreaterThan(50);
    db.close();
    // Nor anywhere in the file's bytes (free pages included): nothing secret was ever written to it.
    const file = readFileSync(signedFile);
    for (const secret of secrets) expect(file.includes(secret)).toBe(false);
    // The check can fail: the reported addresses are in the file.
    expect(file.includes("203.0.113.7")).toBe(true);
  });

  test("meta records format, creation time, source instance, counts, scoring and the signature", () => {
    const info = snapshotInfo(signedFile);
    expect(info).toMatchObject({
      formatVersion: 1,
      createdAt: new Date(h.clock.now()).toISOString(),
      createdAtMs: h.clock.now(),
      counts: { addresses: reported.length, allowlist: 1, threats: 1, feeds: 0, networks: 0, rangeTables: 1 },
      signed: true,
    });
    expect(info.scoring?.halfLifeDays).toBe(30);
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(info.signatureKeyId).toMatch(/^[0-9a-f]{16}$/);
    const instance = (h.store.sqlite.query("SELECT value FROM meta WHERE key = 'instance_id'").get() as { value: string }).value;
    expect(info.sourceInstance).toBe(instance);
    expect(info.bytes).toBe(statSync(signedFile).size);
  });

  test("the source instance id is created once and kept", async () => {
    const [a, b] = [join(dir, "again-a.sqlite"), join(dir, "again-b.sqlite")];
    await exportSnapshot({ store: h.store, services: h.services, out: a, nowMs: h.clock.now() });
    await exportSnapshot({ store: h.store, services: h.services, out: b, nowMs: h.clock.now() });
    expect(snapshotInfo(a).sourceInstance).toBe(snapshotInfo(signedFile).sourceInstance);
    // The same data at the same moment gives the same content hash: the serialization is canonical.
    expect(snapshotInfo(a).sha256).toBe(snapshotInfo(b).sha256);
    expect(snapshotInfo(a).signed).toBe(false);
    // The signing key's id is part of the signed content.
    expect(snapshotInfo(a).sha256).not.toBe(snapshotInfo(signedFile).sha256);
  });

  test("the file appears only when complete: no temporary file is left beside it", async () => {
    const sub = mkdtempSync(join(dir, "out-"));
    await exportSnapshot({ store: h.store, services: h.services, out: join(sub, "s.sqlite"), nowMs: h.clock.now() });
    expect(require("node:fs").readdirSync(sub)).toEqual(["s.sqlite"]);
    await expect(exportSnapshot({ store: h.store, services: h.services, out: join(sub, "missing", "s.sqlite"), nowMs: h.clock.now() })).rejects.toThrow(
      /does not exist/,
    );
  });

  test("an in-memory store exports too (copied to a file first, the copy removed)", async () => {
    const store = openMemoryStore();
    try {
      store.sqlite
        .query(
          `INSERT INTO addresses (ip, ip_version, reputation_score, total_reports, verified_reports, categories_mask, last_category, first_seen, last_seen, scored_at)
           VALUES ('192.0.2.5', 4, 40, 2, 1, 1, 'SPAM', ?1, ?1, ?1)`,
        )
        .run(h.clock.now());
      const sub = mkdtempSync(join(dir, "memory-"));
      const result = await exportSnapshot({ store, out: join(sub, "m.sqlite"), nowMs: h.clock.now() });
      expect(result.counts.addresses).toBe(1);
      expect(require("node:fs").readdirSync(sub)).toEqual(["m.sqlite"]);
      const snap = openSnapshot(result.file);
      try {
        expect(snap.reputation.detail(parseIp("192.0.2.5"))).toMatchObject({ reports: 2, verifiedReports: 1, reputationScore: 40, threatLevel: "high", categories: ["SPAM"] });
      } finally {
        snap.close();
      }
    } finally {
      store.close();
    }
  });
});

describe("verify", () => {
  test("an untouched snapshot verifies, with and without its public key", () => {
    expect(verifySnapshot(signedFile)).toMatchObject({ ok: true, problems: [], signed: true, signatureValid: null });
    const withKey = verifySnapshot(signedFile, keys.publicPath);
    expect(withKey).toMatchObject({ ok: true, signatureValid: true });
    expect(withKey.computedSha256).toBe(withKey.recordedSha256);
  });

  test("a wrong public key fails", () => {
    const result = verifySnapshot(signedFile, otherKeys.publicPath);
    expect(result.ok).toBe(false);
    expect(result.signatureValid).toBe(false);
    expect(result.problems.join()).toMatch(/signature does not match/);
  });

  test("an unsigned snapshot fails when a public key is given", async () => {
    const unsigned = join(dir, "unsigned.sqlite");
    await exportSnapshot({ store: h.store, services: h.services, out: unsigned, nowMs: h.clock.now() });
    expect(verifySnapshot(unsigned).ok).toBe(true);
    expect(verifySnapshot(unsigned, keys.publicPath)).toMatchObject({ ok: false, problems: ["the snapshot is not signed, but a public key was given"] });
  });

  /** A copy of the signed file with the byte at `at(file)` flipped. */
  function flipped(name: string, at: (file: Buffer) => number): string {
    const copy = join(dir, name);
    copyFileSync(signedFile, copy);
    const bytes = readFileSync(copy);
    const offset = at(bytes);
    expect(offset).toBeGreaterThan(0);
    bytes[offset] ^= 0x01;
    writeFileSync(copy, bytes);
    return copy;
  }

  test("one flipped byte in a stored address fails verification", () => {
    const copy = flipped("flip-address.sqlite", (b) => b.indexOf("2a00:1450:4001:80b::200e") + 5);
    const result = verifySnapshot(copy, keys.publicPath);
    expect(result.ok).toBe(false);
    expect(result.problems.length).toBeGreaterThan(0);
  });

  test("one flipped byte in an index's copy of an address (not part of the hashed rows) fails the integrity check", () => {
    const copy = flipped("flip-index.sqlite", (b) => {
      const text = "2a00:1450:4001:80b::200e";
      // The last copy in the file: the addresses_last_seen index is built after the table and the blobs.
      expect(b.indexOf(text)).not.toBe(b.lastIndexOf(text));
      return b.lastIndexOf(text) + 5;
    });
    const result = verifySnapshot(copy);
    expect(result.ok).toBe(false);
    expect(result.problems.join()).toMatch(/damaged/);
  });

  test("one flipped byte inside a blob (the range table) fails the content hash", () => {
    const copy = flipped("flip-blob.sqlite", (b) => b.indexOf("AIRT") + 40);
    const result = verifySnapshot(copy);
    expect(result.ok).toBe(false);
    expect(result.problems.join()).toMatch(/does not match its hash/);
  });

  test("a changed value written through SQLite (a file that is still perfectly valid) fails the hash and the signature holds no more", () => {
    const copy = join(dir, "edited.sqlite");
    copyFileSync(signedFile, copy);
    const db = new Database(copy);
    db.query("UPDATE addresses SET reputation_score = 99 WHERE ip = '203.0.113.7'").run();
    db.close();
    expect(verifySnapshot(copy, keys.publicPath).problems.join()).toMatch(/does not match its hash/);
    // Re-hashing the edited content does not help without the private key.
    const rehash = new Database(copy);
    rehash.query("UPDATE meta SET value = ? WHERE key = ?").run(contentHash(rehash), META.contentSha256);
    rehash.close();
    const result = verifySnapshot(copy, keys.publicPath);
    expect(result.ok).toBe(false);
    expect(result.problems.join()).toMatch(/signature does not match/);
  });

  test("the content hash is read a step of rows at a time (issue 29), the same hash as at once", () => {
    const db = new Database(signedFile, { readonly: true });
    try {
      const rows = (db.query("SELECT (SELECT count(*) FROM addresses) + (SELECT count(*) FROM meta) AS n").get() as { n: number }).n;
      const steps = contentHashInSteps(db, new Pace(2));
      let yields = 0;
      let next = steps.next();
      for (; !next.done; next = steps.next()) yields++;
      // A yield after every two rows of every table: at least half the addresses' and meta's rows.
      expect(yields).toBeGreaterThanOrEqual(Math.floor(rows / 2) - 1);
      expect(next.value).toBe(contentHash(db));
      expect(snapshotInfo(signedFile).sha256).toBe(next.value);
    } finally {
      db.close();
    }
  });

  test("a file that is not a snapshot fails with a reason", () => {
    const junk = join(dir, "junk.sqlite");
    writeFileSync(junk, "not a database at all");
    expect(verifySnapshot(junk).ok).toBe(false);
    expect(verifySnapshot(join(dir, "nothing-here.sqlite")).problems.join()).toMatch(/does not exist/);
  });
});

describe("open", () => {
  test("the pre-built index gives the same records as the live index and as a rebuild from the rows", () => {
    const snap = openSnapshot(signedFile);
    try {
      expect(snap.indexPrebuilt).toBe(true);
      const rebuilt = indexFromRows(snap.store.sqlite, snap.scoring.riskThresholds);
      expect(snap.index.size).toBe(h.services.index.size);
      for (const text of [...reported, ...unreported]) {
        const ip = parseIp(text);
        const live = h.services.index.slotOf(ip);
        const slot = snap.index.slotOf(ip);
        expect(slot === NOT_FOUND).toBe(live === NOT_FOUND);
        if (live === NOT_FOUND) continue;
        expect(snap.index.record(slot)).toEqual(h.services.index.record(live));
        expect(snap.index.risk[slot]).toBe(h.services.index.risk[live]);
        expect(rebuilt.record(rebuilt.slotOf(ip))).toEqual(h.services.index.record(live));
      }
    } finally {
      snap.close();
    }
  });

  test("lookups from the snapshot equal the live server's: detail, reputation, bulk, recent", async () => {
    const snap = openSnapshot(signedFile);
    try {
      for (const text of [...reported, ...unreported]) {
        const ip = parseIp(text);
        expect(snap.reputation.detail(ip)).toEqual(h.services.reputation.detail(ip));
        const live = await bodyOf(await h.call("GET", `/v1/ip/${text}`, { headers: reporters[0].apiKey }));
        expect(snap.reputation.detail(ip)).toEqual(live);
      }
      expect(snap.reputation.detail(parseIp("8.8.4.4")).isAllowlisted).toBe(true);
      expect(snap.reputation.detail(parseIp("203.0.113.7")).reports).toBe(3);
      const inputs = [...reported, "nope", ...unreported];
      const strip = (r: { results: { cached: boolean }[] }) => ({ ...r, results: r.results.map((x) => ({ ...x, cached: false })) });
      expect(strip(snap.reputation.bulk(inputs))).toEqual(strip(h.services.reputation.bulk(inputs)));
      expect(snap.reputation.recent(5, 2)).toEqual(h.services.reputation.recent(5, 2));
      expect(snap.reputation.recent(100, 0).total).toBe(reported.length);
    } finally {
      snap.close();
    }
  });

  test("an address whose reports passed retention at export time is left out, as the server answers then", async () => {
    const local = await createHarness();
    try {
      const report = async (ip: string) => {
        const who = await addUser(local, { tier: "enterprise" });
        expect((await local.call("POST", "/v1/ip/report", { headers: who.jwt, json: { ip, category: "spam" } })).status).toBe(201);
      };
      await report("192.0.2.77");
      local.clock.advance(200 * DAY_MS);
      await report("192.0.2.78");
      local.clock.advance(200 * DAY_MS);
      const file = join(dir, "retention.sqlite");
      // Exported before any lookup or job noticed that the first address's only report has expired.
      await exportSnapshot({ store: local.store, services: local.services, out: file, nowMs: local.clock.now() });
      // The data directory read-only: the expired report stops counting there too, computed, not written.
      const rows = () => local.store.sqlite.query("SELECT ip, total_reports FROM addresses ORDER BY ip").all();
      const before = rows();
      const offline = await openDataDirectory(local.services.config, { needGeo: true, clock: local.clock });
      try {
        expect(offline.reputation.detail(parseIp("192.0.2.77")).reports).toBe(0);
        expect(offline.reputation.detail(parseIp("192.0.2.78")).reports).toBe(1);
      } finally {
        offline.close();
      }
      expect(rows()).toEqual(before);
      expect(before.length).toBe(2);
      const snap = openSnapshot(file);
      try {
        expect(snap.info.counts.addresses).toBe(1);
        for (const text of ["192.0.2.77", "192.0.2.78"]) {
          expect(snap.reputation.detail(parseIp(text))).toEqual(local.services.reputation.detail(parseIp(text)));
        }
        expect(snap.reputation.detail(parseIp("192.0.2.77")).reports).toBe(0);
        expect(snap.reputation.detail(parseIp("192.0.2.78")).reports).toBe(1);
      } finally {
        snap.close();
      }
    } finally {
      await local.close();
    }
  });

  test("a source for a few addresses (a cold check) reads only their rows and answers the same for them", () => {
    const ips = [...reported, ...unreported].map(parseIp);
    const snap = openSnapshot(signedFile, { only: ips });
    try {
      expect(snap.indexPrebuilt).toBe(false);
      expect(snap.index.size).toBe(reported.length);
      for (const ip of ips) expect(snap.reputation.detail(ip)).toEqual(h.services.reputation.detail(ip));
    } finally {
      snap.close();
    }
  });

  test("the data directory, opened read-only while the server runs, answers as the server does", async () => {
    const ips = [...reported, ...unreported].map(parseIp);
    for (const only of [undefined, ips.slice(0, 3)]) {
      const local = await openDataDirectory(h.services.config, { needGeo: true, clock: h.clock, only });
      try {
        for (const ip of only ?? ips) expect(local.reputation.detail(ip)).toEqual(h.services.reputation.detail(ip));
        if (only === undefined) expect(local.reputation.recent(100, 0)).toEqual(h.services.reputation.recent(100, 0));
      } finally {
        local.close();
      }
    }
  });

  test("a snapshot refuses changes: allowlist edits give read_only", () => {
    const snap = openSnapshot(signedFile);
    try {
      expect(() => snap.allowlist.add("192.0.2.0/24", "", null)).toThrow(/read-only/);
      expect(snap.allowlist.list().map((e) => e.cidr)).toEqual(["8.8.4.0/24"]);
    } finally {
      snap.close();
    }
  });
});
