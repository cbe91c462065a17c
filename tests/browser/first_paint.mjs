// Measures the console's first paint on a large simulated fleet: bench_load's
// simulated agents (--nodes N) against a real tessel-scheduler, the fleet view
// loaded in the system's headless Chromium at 1280x800. Prints, for each of
// --runs fresh page loads (from navigation start): the first contentful paint,
// when the API's answers were in, when the first screen of boards was drawn, and
// when every node's board was in the DOM; then the medians.
// Not a test; bench/RESULTS.md has the numbers.
//
// node first_paint.mjs --bench-load BIN --scheduler BIN [--nodes 1000] [--runs 5]
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const nodes = Number(args.nodes || 1000);
const runs = Number(args.runs || 5);
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

async function until(what, fn, timeout = 120_000) {
  const end = Date.now() + timeout;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const bench = spawn(args['bench-load'], ['--nodes', String(nodes), '--seconds', '600', '--scheduler', args.scheduler,
  '--scheduler-arg', '--max-event-streams', '--scheduler-arg', '8'], { stdio: ['ignore', 'ignore', 'pipe'] });
let benchErr = '';
bench.stderr.on('data', (d) => { benchErr += d; });
let browser;
try {
  // bench_load starts the scheduler with its database in a temp folder; its address is in scheduler.out there.
  const base = await until('the scheduler', () => {
    const pid = execFileSync('pgrep', ['-P', String(bench.pid)]).toString().trim().split('\n')[0];
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const out = path.join(path.dirname(argv[argv.indexOf('--db') + 1]), 'scheduler.out');
    const m = existsSync(out) && readFileSync(out, 'utf8').match(/^listening on (\S+)/m);
    return m && `http://${m[1]}`;
  });
  await until(`${nodes} registered nodes`, async () => (await (await fetch(`${base}/v1/nodes`)).json()).nodes.length === nodes);
  const t0 = performance.now();
  const bytes = (await (await fetch(`${base}/v1/nodes`)).text()).length;
  console.log(`scheduler at ${base}, ${nodes} nodes; GET /v1/nodes is ${(bytes / 1e6).toFixed(1)} MB, ` +
    `answered in ${(performance.now() - t0).toFixed(0)} ms`);
  const flags = ['--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'];
  if (process.getuid() === 0) flags.push('--no-sandbox');
  browser = await puppeteer.launch({ executablePath: chromium, args: flags, defaultViewport: { width: 1280, height: 800 } });
  const fcps = [];
  const fulls = [];
  const firsts = [];
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();
    await page.setCacheEnabled(false);
    await page.goto(`${base}/ui/`);
    // Polled each frame: when the first boards are on screen, and when all are in the DOM.
    const [first, full] = await page.evaluate((n) => new Promise((resolve) => {
      let firstAt = 0;
      const check = () => {
        if (!firstAt && document.querySelector('[data-board]')) firstAt = performance.now();
        if (document.querySelectorAll('[data-board]').length === n)
          requestAnimationFrame(() => setTimeout(() => resolve([firstAt, performance.now()]), 0));
        else requestAnimationFrame(check);
      };
      check();
    }), nodes);
    const fcp = await page.evaluate(() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime);
    const data = await page.evaluate(() => Math.max(...performance.getEntriesByType('resource')
      .filter((e) => /\/v1\/(nodes|inventory|jobs)/.test(e.name)).map((e) => e.responseEnd)));
    fcps.push(fcp);
    firsts.push(first);
    fulls.push(full);
    console.log(`run ${i + 1}: first contentful paint ${fcp.toFixed(0)} ms, data in ${data.toFixed(0)} ms, ` +
      `first screen of boards ${first.toFixed(0)} ms, all ${nodes} boards ${full.toFixed(0)} ms`);
    await page.close();
  }
  const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(`median: first contentful paint ${median(fcps).toFixed(0)} ms, first screen of boards ` +
    `${median(firsts).toFixed(0)} ms, all boards ${median(fulls).toFixed(0)} ms`);
} catch (e) {
  console.error(`first_paint: ${e.message}\n${benchErr.slice(-2000)}`);
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  bench.kill('SIGTERM');
}
