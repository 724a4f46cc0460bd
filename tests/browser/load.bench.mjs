// Measures the page with a long session: time from navigation until the
// last event of the session is on screen, and the page's JS heap.
// Usage: node load.bench.mjs WICKET_HOME SESSION_ID   (a server must not be running there)
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { resolve, join } from "node:path";

const [home, id] = process.argv.slice(2);
const root = resolve(import.meta.dirname, "../..");
const bin = process.env.WICKET_BIN ?? join(root, "target/release/wicket");
const server = spawn(bin, ["serve", "--port", "0"], { env: { ...process.env, WICKET_HOME: home }, stdio: ["ignore", "pipe", "inherit"] });
const link = await new Promise((ok) => {
  let out = "";
  server.stdout.on("data", (c) => { out += c; const m = out.match(/(http:\/\/\S+\?token=\w+)/); if (m) ok(m[1]); });
});
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const start = Date.now();
  await page.goto(link.replace("/?", "/?") + "#" + id);
  // Polled every frame: waitForSelector backs off to 500 ms between looks,
  // which would be most of what it measured.
  const inPage = await page.waitForFunction(
    () => document.querySelector(".result") && performance.now(),
    null,
    { polling: "raf", timeout: 60000 },
  );
  const shown = Date.now() - start;
  const sinceNavigation = Math.round(await inPage.jsonValue());
  const { metrics } = await cdp.send("Performance.getMetrics");
  const heap = metrics.find((m) => m.name === "JSHeapUsedSize").value;
  const nodes = metrics.find((m) => m.name === "Nodes").value;
  const rows = await page.locator("#transcript .row").count();
  console.log(`last event on screen ${sinceNavigation} ms after navigation began (${shown} ms from goto); JS heap ${(heap / 1048576).toFixed(1)} MiB; ${nodes} DOM nodes; ${rows} transcript rows drawn`);
} finally {
  await browser.close();
  server.kill("SIGTERM");
}
