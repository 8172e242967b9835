// The web console in a real browser (contract section 15): playwright-core driving Debian's chromium (never a
// downloaded one) against the listener production serves with. Sign in (and a wrong password), a key made and
// shown once, used by fetch and revoked, a report seen on its IP page, admin pages refused to others, a form
// posted from another site refused, no request to any host but the appliance, no horizontal scroll at 360 px.
// With SCREENSHOTS=1 (npm run screenshots) it also writes the main pages to docs/screenshots/.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { CONSOLE_PAGES } from "../../src/http/console/router";
import { addUser, TEST_PASSWORD, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { FIREWALL_TESTS_REQUIRED } from "../support/netns";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) {
  if (FIREWALL_TESTS_REQUIRED) throw new Error(`no chromium at ${CHROMIUM}, and ABUSE_INTEL_FIREWALL_TESTS=required (CI installs Debian's chromium)`);
  console.warn(`the console's browser tests are skipped: no chromium at ${CHROMIUM} (apt-get install chromium)`);
}
const SCREENSHOTS = process.env.SCREENSHOTS === "1" ? join(import.meta.dir, "../../docs/screenshots") : null;

let h: Harness;
let browser: Browser;
let admin: TestUser;
let member: TestUser;
const requested: string[] = [];

beforeAll(async () => {
  if (!available) return;
  h = await createHarness();
  admin = await addUser(h, { role: "admin", tier: "enterprise", email: "admin@example.test" });
  member = await addUser(h, { tier: "free", email: "member@example.test" });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"], headless: true });
  if (SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function session(width = 1200): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 800 } });
  const page = await context.newPage();
  page.on("request", (r) => requested.push(r.url()));
  return { context, page };
}

/** Clicks a form's button and waits for the page it leads to. */
async function submit(page: Page, button: ReturnType<Page["getByRole"]>): Promise<void> {
  await Promise.all([page.waitForNavigation(), button.click()]);
}

const text = async (locator: ReturnType<Page["locator"]>) => ((await locator.textContent()) ?? "").trim();

async function signIn(page: Page, email: string, password = TEST_PASSWORD): Promise<void> {
  await page.goto(`${h.url}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await submit(page, page.getByRole("button", { name: "Sign in" }));
}

describe.skipIf(!available)("the console in chromium", () => {
  test("a wrong password is a message on the sign-in page", async () => {
    const { context, page } = await session();
    await signIn(page, "admin@example.test", "not the password at all");
    expect(await text(page.getByRole("alert"))).toBe("Invalid email or password");
    expect(new URL(page.url()).pathname).toBe("/login");
    await context.close();
  }, 30_000);

  test("sign in; a key made and shown once, used by fetch, revoked", async () => {
    const { context, page } = await session();
    await signIn(page, "admin@example.test");
    expect(await page.getByRole("heading", { name: "Overview" }).isVisible()).toBe(true);
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "overview.png"), fullPage: true });
    await Promise.all([page.waitForNavigation(), page.getByRole("link", { name: "API keys" }).first().click()]);
    await page.getByLabel("New key's name").fill("firewall");
    await submit(page, page.getByRole("button", { name: "Create key" }));
    const key = (await page.locator("#api-key").textContent())!.trim();
    expect(key).toMatch(/^aik_[A-Za-z0-9]{40}$/);
    expect(await page.getByRole("button", { name: "Copy" }).isVisible()).toBe(true);
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "api-keys.png"), fullPage: true });
    // Shown once: the list shows only its prefix.
    await page.goto(`${h.url}/console/keys`);
    expect(await page.content()).not.toContain(key);
    expect(await page.content()).toContain(key.slice(0, 12));
    const status = (k: string) => page.evaluate(async (k) => (await fetch("/v1/ip/8.8.8.8/reputation", { headers: { "X-API-Key": k } })).status, k);
    expect(await status(key)).toBe(200);
    await submit(page, page.getByRole("button", { name: "Revoke firewall" }));
    expect(await text(page.getByRole("status"))).toContain("revoked");
    expect(await status(key)).toBe(401);
    await context.close();
  }, 30_000);

  test("a report, then the address's IP page shows it", async () => {
    const { context, page } = await session();
    await signIn(page, "admin@example.test");
    await page.goto(`${h.url}/console/report?ip=198.51.100.77`);
    await page.getByLabel("Category").selectOption("SSH");
    await page.getByLabel("Severity").selectOption("4");
    await page.getByLabel("Description").fill("sshd: repeated failed logins");
    await submit(page, page.getByRole("button", { name: "Report" }));
    expect(await text(page.getByRole("status"))).toContain("accepted for 198.51.100.77");
    await page.goto(`${h.url}/console/ip?ip=198.51.100.77`);
    expect(await text(page.locator("#reputation"))).toContain("1 (0 verified)");
    expect(await text(page.getByRole("table").last())).toContain("sshd: repeated failed logins");
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "ip-page.png"), fullPage: true });
    await page.goto(`${h.url}/console/blocklist?riskLevel=MEDIUM&category=SSH`);
    expect(await text(page.locator("#nft"))).toContain("riskLevel=MEDIUM");
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "blocklist-builder.png"), fullPage: true });
    await page.goto(`${h.url}/console/admin/users`);
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, "admin-users.png"), fullPage: true });
    await context.close();
  }, 30_000);

  test("a non-admin is refused the admin pages", async () => {
    const { context, page } = await session();
    await signIn(page, "member@example.test");
    const res = await page.goto(`${h.url}/console/admin/users`);
    expect(res!.status()).toBe(403);
    expect(await text(page.getByRole("alert"))).toBe("This page is for administrators.");
    await context.close();
  }, 30_000);

  test("a form posted from another site is refused and changes nothing", async () => {
    const { context, page } = await session();
    await signIn(page, "admin@example.test");
    const keysBefore = h.services.apiKeys.listForUser(admin.user.id).length;
    // A page on another origin (another port of 127.0.0.1) that posts a form to the console.
    const evil = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(`<!doctype html><form id="f" method="post" action="${h.url}/console/keys"><input name="name" value="evil"><input name="csrf" value="guess"></form><script>document.getElementById("f").submit()</script>`, {
          headers: { "content-type": "text/html" },
        }),
    });
    try {
      const answer = page.waitForResponse((r) => r.url() === `${h.url}/console/keys` && r.request().method() === "POST");
      await page.goto(`http://localhost:${evil.port}/`);
      expect((await answer).status()).toBe(403);
      expect(h.services.apiKeys.listForUser(admin.user.id).length).toBe(keysBefore);
    } finally {
      evil.stop(true);
      await context.close();
    }
  }, 30_000);

  test("every page at 360 px: no horizontal scroll; every request went to the appliance", async () => {
    const { context, page } = await session(360);
    await signIn(page, "admin@example.test");
    for (const path of CONSOLE_PAGES) {
      const res = await page.goto(`${h.url}${path}`);
      expect({ path, status: res!.status() }).toEqual({ path, status: 200 });
      const overflow = await page.evaluate(() => {
        const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
        return root.scrollWidth - root.clientWidth;
      });
      expect({ path, overflow }).toEqual({ path, overflow: 0 });
    }
    if (SCREENSHOTS) {
      await page.goto(`${h.url}/console/ip?ip=198.51.100.77`);
      await page.screenshot({ path: join(SCREENSHOTS, "ip-page-360px.png"), fullPage: true });
    }
    await context.close();
    const foreign = requested.filter((u) => !u.startsWith(h.url) && !u.startsWith("data:") && !u.startsWith("http://localhost:"));
    expect(foreign).toEqual([]);
  }, 60_000);
});
