// The web console in a real headless Chromium, against a real tessel-scheduler and
// two real tessel-agents on the fake hl-smi (loopback, port 0). Loads each view,
// checks the DOM (node names, module ids, free groups, a job's state changing live
// after a submission and a cancel, without a reload; the job's stored state history;
// an array shown as one row with its elements' states; card-hours by project and by
// user), checks that a browser without a valid token is refused, and saves
// screenshots at 1280x800 and 390x844.
//
// node console_test.mjs --scheduler BIN --agent BIN --hl-smi BIN --fixtures DIR --out DIR
// Exit 0: passed; 77: skipped (no Chromium or no puppeteer-core; said why); else failed.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

const SKIP = 77;
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
for (const k of ['scheduler', 'agent', 'hl-smi', 'fixtures', 'out'])
  if (!args[k]) { console.error(`console_test: --${k} is required`); process.exit(2); }

const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromium)) {
  console.log(`SKIP: no Chromium at ${chromium} (scripts/setup.sh installs Debian's chromium; or set CHROMIUM)`);
  process.exit(SKIP);
}
let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch (e) {
  console.log(`SKIP: puppeteer-core is not installed in tests/browser (scripts/setup.sh runs npm ci there): ${e.message}`);
  process.exit(SKIP);
}

const TIMEOUT = 20_000;
const tmp = mkdtempSync(path.join(tmpdir(), 'tessel-console-'));
const children = [];
const shots = path.resolve(args.out);
mkdirSync(shots, { recursive: true });

function start(bin, argv, env, name) {
  const child = spawn(bin, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.out = '';
  child.err = '';
  child.stdout.on('data', (d) => { child.out += d; });
  child.stderr.on('data', (d) => { child.err += d; });
  child.name = name;
  children.push(child);
  return child;
}

// Polls `fn` until it returns a truthy value or the deadline passes.
async function until(what, fn, timeout = TIMEOUT) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ADMIN = 'a'.repeat(40);
const USER = 'u'.repeat(40);
let base = '';

async function call(method, p, token, body) {
  const res = await fetch(base + p, {
    method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// Clicks in one step inside the page: live updates redraw buttons, so a handle taken
// before the click may already be detached.
async function clickNow(page, selector) {
  await page.$eval(selector, (e) => e.click());
}

let browser;
let failed = false;
try {
  const tokens = path.join(tmp, 'tokens');
  writeFileSync(tokens, `${ADMIN} admin alice\n${USER} user bob\n${'b'.repeat(40)} agent gaudi-a\n${'c'.repeat(40)} agent gaudi-b\n`,
    { mode: 0o600 });
  const sched = start(args.scheduler,
    ['--listen', '127.0.0.1:0', '--db', path.join(tmp, 'tessel.db'), '--tokens', tokens, '--heartbeat-timeout', '10'],
    {}, 'scheduler');
  const addr = await until('the scheduler to listen', () => (sched.out.match(/^listening on (\S+)/m) || [])[1]);
  base = `http://${addr}`;
  console.log(`scheduler at ${base}`);
  // gaudi-a: 8 cards, the one at index 0 (module 1) unhealthy by its sysfs status; gaudi-b: 4 cards.
  const sysfs = path.join(tmp, 'sysfs-a');
  for (let i = 0; i < 8; i++) {
    mkdirSync(path.join(sysfs, 'class', 'accel', `accel${i}`, 'device'), { recursive: true });
    writeFileSync(path.join(sysfs, 'class', 'accel', `accel${i}`, 'device', 'status'), i === 0 ? 'in reset\n' : 'operational\n');
  }
  for (const [node, fixture, tok] of [['gaudi-a', 'gaudi2-hl225-8.csv', 'b'], ['gaudi-b', 'gaudi2-4card.csv', 'c']]) {
    const tf = path.join(tmp, `${node}.token`);
    writeFileSync(tf, `${tok.repeat(40)}\n`, { mode: 0o600 });
    start(args.agent,
      ['--scheduler', base, '--node', node, '--address', '127.0.0.1', '--listen', '127.0.0.1:0',
        '--state-dir', path.join(tmp, node), '--vendor', 'habana', '--hl-smi', args['hl-smi'],
        '--heartbeat-interval', '0.5', '--token-file', tf, ...(node === 'gaudi-a' ? ['--sysfs-root', sysfs] : []),
        // A root agent runs jobs as a named user; the test's jobs only print.
        ...(process.getuid() === 0 ? ['--run-as', 'root'] : [])],
      { FAKE_HL_SMI_FIXTURE: path.join(args.fixtures, 'hl-smi', fixture) }, node);
  }
  await until('2 ready nodes', async () =>
    (await call('GET', '/v1/nodes', ADMIN)).nodes.filter((n) => n.state === 'ready').length === 2);

  const args_ = ['--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'];
  if (process.getuid && process.getuid() === 0) args_.push('--no-sandbox'); // Chromium refuses root otherwise.
  browser = await puppeteer.launch({ executablePath: chromium, args: args_, defaultViewport: { width: 1280, height: 800 } });
  const shot = async (page, name) => {
    const file = path.join(shots, `${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
  };

  // 1. Without a token, and with a wrong one: refused, and the data endpoints answer 401.
  {
    const ctx = await browser.createBrowserContext();
    const page = await ctx.newPage();
    const cspViolations = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text()); });
    const res = await page.goto(`${base}/ui/`);
    assert.equal(res.status(), 200);
    assert.match(res.headers()['content-security-policy'], /script-src 'self'/);
    assert.ok(res.headers().etag, 'index.html has an ETag');
    await page.waitForSelector('body[data-auth="refused"]', { timeout: TIMEOUT });
    assert.match(await page.$eval('#login-message', (e) => e.textContent), /refused/i);
    const statuses = await page.evaluate(async () => Promise.all(
      ['/v1/nodes', '/v1/jobs', '/v1/inventory', '/v1/events', '/v1/whoami'].map(async (p) => (await fetch(p)).status)));
    assert.deepEqual(statuses, [401, 401, 401, 401, 401]);
    await shot(page, 'refused-1280x800');
    await page.type('#token', 'not-a-token');
    await page.click('#login-form button');
    await page.waitForFunction(() => /Token refused by the scheduler/.test(document.getElementById('login-message').textContent),
      { timeout: TIMEOUT });
    assert.equal(await page.$eval('#node-grid', () => 1).catch(() => 0), 0, 'no data view for a refused token');
    assert.deepEqual(cspViolations, []);
    await ctx.close();
    console.log('ok: a browser without a valid token is refused (401 on every data endpoint)');
  }

  // 2. The admin: fleet view with both boards.
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text()); });
  await page.goto(`${base}/ui/`);
  await page.waitForSelector('#token', { visible: true, timeout: TIMEOUT });
  await page.type('#token', ADMIN);
  await page.click('#login-form button');
  await page.waitForSelector('[data-node="gaudi-a"] [data-module="7"]', { timeout: TIMEOUT });
  await page.waitForSelector('#live[data-live="on"]', { timeout: TIMEOUT });
  await page.evaluate(() => { window.__noReload = 1; });
  const boards = await page.$$eval('[data-board]', (bs) => bs.map((b) => ({
    name: b.dataset.board,
    modules: [...b.querySelectorAll('[data-module]')].map((m) => `${m.dataset.module}:${m.dataset.kind}`),
    groups: [...b.querySelectorAll('[data-group]')].map((g) => g.dataset.group),
  })));
  const a = boards.find((b) => b.name === 'gaudi-a');
  const b = boards.find((b) => b.name === 'gaudi-b');
  assert.deepEqual(a.modules, ['0:free', '1:unhealthy', '2:free', '3:free', '4:free', '5:free', '6:free', '7:free']);
  assert.deepEqual(a.groups, ['4,5,6,7', '2,3']);
  assert.match(await page.$eval('[data-board="gaudi-a"] [data-module="1"]', (e) => e.textContent), /✕/);
  assert.deepEqual(b.modules, ['0:free', '1:free', '2:free', '3:free', '4:absent', '5:absent', '6:absent', '7:absent']);
  assert.deepEqual(b.groups, ['0,1,2,3']);
  assert.equal(await page.$eval('[data-model="HL-225"] [data-k="cards"]', (e) => e.textContent), '12');
  assert.equal(await page.$eval('[data-model="HL-225"] [data-k="unhealthy"]', (e) => e.textContent), '1');
  await shot(page, 'fleet-1280x800');
  console.log('ok: fleet view shows both boards, their module ids, an unhealthy card, absent cards and free groups');

  // 3. A submission shows up live: the cards turn busy and the free groups shrink.
  const job = await call('POST', '/v1/jobs', ADMIN, {
    name: 'console-test', nodes: 1, devices: 4,
    command: ['sh', '-c', 'echo hello-from-rank-0; i=0; while [ $i -lt 600 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done'],
  });
  console.log(`submitted ${job.id}`);
  await page.waitForFunction((id) => document.querySelectorAll(`[data-board] [data-job="${id}"][data-kind="busy"]`).length === 4,
    { timeout: TIMEOUT }, job.id);
  await page.waitForFunction(() => document.querySelector('[data-jobs="running"]').textContent === '1', { timeout: TIMEOUT });
  // The board holding the job outlines no free group over its cards.
  const held = await page.$$eval('[data-board]', (bs, id) => bs.map((b) => ({
    name: b.dataset.board,
    busy: [...b.querySelectorAll(`[data-job="${id}"]`)].map((m) => Number(m.dataset.module)),
    groups: [...b.querySelectorAll('[data-group]')].map((g) => g.dataset.group.split(',').map(Number)),
  })).filter((b) => b.busy.length), job.id);
  assert.equal(held.length, 1);
  assert.ok(held[0].groups.every((g) => g.every((m) => !held[0].busy.includes(m))),
    `free groups over busy cards: ${JSON.stringify(held[0])}`);
  const groupsAfter = await page.$$eval('[data-group]', (gs) => gs.map((g) => `${g.closest('[data-board]').dataset.board}{${g.dataset.group}}`));
  await shot(page, 'fleet-busy-1280x800');
  console.log(`ok: the fleet view showed ${job.id} on 4 cards without a reload; free groups now ${groupsAfter.join(' ')}`);

  // 4. The job view: state, allocations, the log of rank 0 followed live; a cancel shows up live.
  await page.evaluate((id) => { location.hash = `#/job/${id}`; }, job.id);
  await page.waitForSelector('#job-state [data-state="running"]', { timeout: TIMEOUT });
  const mods = await page.$eval('[data-modules]', (e) => e.dataset.modules);
  assert.equal(mods.split(',').length, 4);
  await page.waitForFunction(() => /hello-from-rank-0/.test(document.getElementById('log').textContent), { timeout: TIMEOUT });
  const ticks = await page.$eval('#log', (e) => (e.textContent.match(/tick \d+/g) || []).length);
  await page.waitForFunction((n) => (document.getElementById('log').textContent.match(/tick \d+/g) || []).length > n + 2,
    { timeout: TIMEOUT }, ticks);
  await shot(page, 'job-1280x800');
  await page.waitForSelector('#requeue:not([hidden])', { timeout: TIMEOUT });
  assert.ok(await page.$('#hold[hidden]'), 'no hold button on a running job');
  await call('POST', `/v1/jobs/${job.id}/cancel`, ADMIN);
  await page.waitForSelector('#job-state [data-state="cancelled"]', { timeout: TIMEOUT });
  assert.equal(await page.$('#cancel:not([hidden])'), null, 'no cancel button on an ended job');
  assert.equal(await page.$('#requeue:not([hidden])'), null, 'no requeue button on an ended job');
  console.log(`ok: job view followed rank 0's log and showed the cancel of ${job.id} live`);
  // The state history is the scheduler's stored one, not what the page saw.
  await page.waitForFunction(() => document.querySelector('#history tbody tr[data-event="cancelled"]'), { timeout: TIMEOUT });
  const events = await page.$$eval('#history tbody tr', (rs) => rs.map((r) => ({
    event: r.dataset.event, nodes: r.children[3].textContent, reason: r.children[4].textContent })));
  assert.deepEqual(events.map((e) => e.event), ['submitted', 'assigned', 'running', 'cancelled']);
  assert.deepEqual(events.map((e) => e.event), (await call('GET', `/v1/jobs/${job.id}/events`, ADMIN)).events.map((e) => e.event));
  assert.match(events[1].nodes, /^gaudi-[ab]$/);
  assert.equal(events[3].nodes, events[1].nodes);
  assert.match(events[3].reason, /cancelled by alice/);
  await shot(page, 'job-history-1280x800');
  console.log(`ok: job view shows the stored history of ${job.id}: ${events.map((e) => e.event).join(' → ')}`);

  // 5. Queue: a job that cannot fit waits, with its reason; the cancel button ends it.
  const big = await call('POST', '/v1/jobs', ADMIN, { name: 'too-big', nodes: 2, devices: 8, command: ['true'] });
  await page.evaluate(() => { location.hash = '#/queue'; });
  await page.waitForSelector(`#pending [data-job="${big.id}"]`, { timeout: TIMEOUT });
  const reason = await page.$eval(`#pending [data-job="${big.id}"] .reason`, (e) => e.textContent);
  assert.ok(reason.length > 0, 'a pending job shows why it waits');
  assert.ok(await page.$(`#recent [data-job="${job.id}"]`), 'the cancelled job is among the recent ones');
  await shot(page, 'queue-1280x800');
  await page.evaluate((id) => { location.hash = `#/job/${id}`; }, big.id);
  // Issue 31: Hold, then Release, from the job view; each in the stored history with who.
  await page.waitForSelector('#hold:not([hidden])', { timeout: TIMEOUT });
  assert.ok(await page.$('#release[hidden]'), 'no release button on a job that is not held');
  await clickNow(page, '#hold');
  await page.waitForSelector('#release:not([hidden])', { timeout: TIMEOUT });
  assert.ok(await page.$('#hold[hidden]'), 'no hold button on a held job');
  assert.equal((await call('GET', `/v1/jobs/${big.id}`, ADMIN)).reason, 'held by alice');
  await page.waitForFunction(() => /held by alice/.test(document.querySelector('#history tbody tr[data-event="held"]')?.textContent || ''),
    { timeout: TIMEOUT });
  await shot(page, 'job-held-1280x800');
  await clickNow(page, '#release');
  await page.waitForSelector('#hold:not([hidden])', { timeout: TIMEOUT });
  await page.waitForSelector('#history tbody tr[data-event="released"]', { timeout: TIMEOUT });
  assert.equal((await call('GET', `/v1/jobs/${big.id}`, ADMIN)).held_by, undefined);
  console.log(`ok: the job view held and released ${big.id}, and its history names alice for both`);
  await page.waitForSelector('#cancel:not([hidden])', { timeout: TIMEOUT });
  await clickNow(page, '#cancel');
  await page.waitForSelector('#job-state [data-state="cancelled"]', { timeout: TIMEOUT });
  console.log(`ok: queue view lists ${big.id} as pending ("${reason.trim()}"); its cancel button cancelled it`);

  // 5b. An array: one row in the queue, its elements' states on its own view, live.
  const arr = await call('POST', '/v1/jobs', ADMIN, {
    name: 'console-array', devices: 1, array: { count: 3, parallel: 1 }, command: ['sh', '-c', 'sleep 0.3'],
  });
  await page.evaluate(() => { location.hash = '#/queue'; });
  await page.waitForSelector(`[data-array="${arr.id}"]`, { timeout: TIMEOUT });
  assert.equal(await page.$(`[data-job="${arr.id}_0"]`), null, 'elements are grouped, not listed one by one');
  await shot(page, 'queue-array-1280x800');
  await page.evaluate((id) => { location.hash = `#/job/${id}`; }, arr.id);
  await page.waitForSelector('#array[data-count="3"]', { timeout: TIMEOUT });
  await page.waitForFunction(() => document.querySelector('#array [data-count-state="succeeded"]')?.textContent.trim().endsWith(' 3'),
    { timeout: TIMEOUT });
  const elements = await page.$$eval('#array tr[data-job]', (rs) => rs.map((r) => r.dataset.job));
  assert.deepEqual(elements, [`${arr.id}_0`, `${arr.id}_1`, `${arr.id}_2`]);
  await page.waitForSelector('#job-state [data-state="succeeded"]', { timeout: TIMEOUT });
  await shot(page, 'array-1280x800');
  console.log(`ok: array ${arr.id} is one row in the queue; its view counted 3 elements succeeded, live`);

  // 5c. Usage: card-hours of the ended attempts, by project, then by user.
  await page.evaluate(() => { location.hash = '#/usage'; });
  await page.waitForSelector('[data-usage="default"] [data-k="card-hours"]', { timeout: TIMEOUT });
  const attempts = Number(await page.$eval('[data-usage="default"] [data-k="jobs"]', (e) => e.textContent));
  assert.ok(attempts >= 4, `the cancelled job and 3 elements count: ${attempts}`);
  assert.ok(Number(await page.$eval('[data-usage="default"] [data-k="card-hours"]', (e) => e.textContent)) > 0);
  await page.select('#usage-by', 'user');
  await page.waitForSelector('[data-usage="alice"] [data-model="HL-225"]', { timeout: TIMEOUT });
  await shot(page, 'usage-1280x800');
  console.log(`ok: usage view shows card-hours by project (default: ${attempts} attempts) and by user`);

  // 5d. Reservations (issue 32): one made through the API (a day ahead, so nothing
  // else here is kept off gaudi-b) is listed, pending, with its node.
  const day = Math.floor(Date.now() / 1000) + 86400;
  await call('POST', '/v1/reservations', ADMIN, { name: 'demo', nodes: ['gaudi-b'], start: day, end: day + 3600, users: ['bob'] });
  await page.evaluate(() => { location.hash = '#/reservations'; });
  await page.waitForSelector('[data-reservation="demo"] [data-k="state"]', { timeout: TIMEOUT });
  assert.equal(await page.$eval('[data-reservation="demo"] [data-k="state"]', (e) => e.textContent), 'pending');
  assert.match(await page.$eval('[data-reservation="demo"]', (e) => e.textContent), /gaudi-b.*users bob/);
  console.log('ok: the reservations view lists a pending reservation with its node and users');

  // 6. Node view: cards with readings (the charts start from the scheduler's card
  // history), drain and undrain for the admin.
  const history = page.waitForResponse((r) => r.url().endsWith('/v1/nodes/gaudi-a/history'), { timeout: TIMEOUT });
  await page.evaluate(() => { location.hash = '#/node/gaudi-a'; });
  await page.waitForSelector('table.cards tbody tr[data-module="7"]', { timeout: TIMEOUT });
  assert.equal(await page.$$eval('table.cards tbody tr', (r) => r.length), 8);
  const hist = await history;
  assert.equal(hist.status(), 200);
  assert.equal((await hist.json()).cards.length, 8, 'a history per card');
  await clickNow(page, '#drain');
  await page.waitForSelector('[data-node-state="draining"]', { timeout: TIMEOUT });
  await shot(page, 'node-1280x800');
  await page.waitForSelector('#undrain:not([hidden])', { timeout: TIMEOUT });
  await clickNow(page, '#undrain');
  await page.waitForSelector('[data-node-state="ready"]', { timeout: TIMEOUT });
  console.log('ok: node view shows 8 cards; drain and undrain work');

  // 7. Phone width.
  await page.setViewport({ width: 390, height: 844 });
  for (const [hash, sel, name] of [['#/fleet', '[data-node="gaudi-b"]', 'fleet'], [`#/job/${job.id}`, '#job-state', 'job'],
    ['#/queue', '#recent', 'queue'], ['#/node/gaudi-b', 'table.cards', 'node'], ['#/usage', '[data-usage]', 'usage']]) {
    await page.evaluate((hh) => { location.hash = hh; }, hash);
    await page.waitForSelector(sel, { timeout: TIMEOUT });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${name} view is wider than a phone by ${overflow}px`);
    await shot(page, `${name}-390x844`);
  }
  assert.equal(await page.evaluate(() => window.__noReload), 1, 'the page was never reloaded');
  assert.deepEqual(errors, []);
  console.log('ok: every view fits 390 px; no reload, no script error');

  // 8. A user token: no drain buttons; the same API answers.
  {
    const ctx = await browser.createBrowserContext();
    const p = await ctx.newPage();
    await p.goto(`${base}/ui/#/node/gaudi-a`);
    await p.waitForSelector('#token', { visible: true, timeout: TIMEOUT });
    await p.type('#token', USER);
    await p.click('#login-form button');
    await p.waitForSelector('table.cards', { timeout: TIMEOUT });
    assert.equal(await p.$('#drain'), null, 'a user sees no drain button');
    assert.equal(await p.evaluate(() => sessionStorage.getItem('tessel.token')?.length), 40);
    await ctx.close();
    console.log('ok: a user token opens the console without admin actions');
  }
  console.log(`screenshots: ${shots}`);
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e.stack || e}`);
  for (const c of children) console.error(`--- ${c.name} stderr (tail) ---\n${c.err.slice(-3000)}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.on('exit', r)))));
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
