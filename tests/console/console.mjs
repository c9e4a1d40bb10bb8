// console.mjs - drive gpupool's web console in Debian's Chromium (headless,
// through playwright-core) against a real server that test_console.sh has
// filled: tenant A's user signs in, reads the overview, submits a job and
// sees its queue reason, reads the usage charts and creates a key; tenant B's
// user walks every view (whole tenant and project) and none of A's names or
// figures may appear in the page's text or DOM; the platform admin (signing
// in with a pasted token) sees the tenants and the cluster map.  Also: the jobs
// page's gangs (each rank's node), arrays (cap, tasks by state) and
// dependencies; each user's Reservations view (a tenant's user its own only,
// ops the maintenance window and a tenant's reservation nameless, the admin all).
//
//   node console.mjs CONFIG.json
//
// CONFIG: {url, shots (folder for screenshots), chromium, a:{user,password,
// tenant,project,hold_job,cpus}, b:{user,password,tenant,project},
// admin_token, markers:[strings of A that B must never see],
// figures:[numbers of A that B must never see]}.
// Prints one line per screenshot ("screenshot PATH") and a closing
// "console: N checks passed"; exits 1 at the first failed check.  Every page
// also fails on a script error, a Content-Security-Policy violation or a
// request that leaves the server (the console must work offline).
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let passed = 0;
function check(cond, msg) {
  if (!cond) {
    console.error(`FAIL console.mjs: ${msg}`);
    console.log(`console: ${passed} checks passed, 1 failed`);
    process.exit(1);
  }
  passed++;
}
const shots = [];
async function shot(page, name) {
  const file = path.join(cfg.shots, name + '.png');
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
  console.log(`screenshot ${file}`);
}

const browser = await chromium.launch({
  executablePath: cfg.chromium || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage'],
});

// A fresh context (own sessionStorage) with the offline / CSP / error guards.
async function open(who) {
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(15000);
  const problems = [];
  page.on('pageerror', (e) => problems.push(`${who}: script error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/the server responded with a status of (403|404)/.test(m.text()))
      problems.push(`${who}: console error: ${m.text()}`);
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(cfg.url + '/') && !r.url().startsWith('data:'))
      problems.push(`${who}: request leaves the server: ${r.url()}`);
  });
  // nothing the page asks for by itself is missing (a favicon, an asset); API 403/404s are
  // the tests' own probes
  page.on('response', (r) => {
    if (r.status() === 404 && !r.url().includes('/api/'))
      problems.push(`${who}: ${r.url()} answered 404`);
  });
  return { ctx, page, problems };
}
function clean(s, where) {
  check(s.problems.length === 0, `${where}: ${s.problems.join('; ')}`);
}

const renders = (page) => page.evaluate(() => Number(document.body.dataset.renders || 0));
async function settled(page, before) {
  await page.waitForFunction((n) => Number(document.body.dataset.renders || 0) > n, before);
  await page.waitForSelector('#view-body[aria-busy="false"]');
}
async function view(page, name) {
  const before = await renders(page);
  await page.focus(`#nav-${name}`);
  await page.keyboard.press('Enter'); // keyboard navigation
  await settled(page, before);
  check((await page.evaluate(() => document.activeElement && document.activeElement.id)) === 'view-h',
        `view ${name}: focus moves to its heading`);
}
async function pickProject(page, project) {
  const before = await renders(page);
  await page.selectOption('#pick-project', project);
  await settled(page, before);
}
const text = (page, sel) => page.locator(sel).innerText();

async function signInPassword(page, user, password) {
  await page.goto(cfg.url + '/');
  check((await page.title()) === 'gpupool console', 'the console page loads');
  // by keyboard: the name field has focus, Tab to the password, Enter submits
  await page.waitForFunction(() => document.activeElement && document.activeElement.id === 'login-name');
  const before = await renders(page);
  await page.keyboard.type(user);
  await page.keyboard.press('Tab');
  await page.keyboard.type(password);
  await page.keyboard.press('Enter');
  await settled(page, before);
  check((await text(page, '#who-name')) === user, `${user} is signed in`);
}

// Signed out, the header shows nothing of a session: no "Signed in as", no pickers, no Sign out.
async function signedOutHeader(page, where) {
  for (const sel of ['#who', '#who-name', '#pick-tenant', '#pick-project', '#sign-out', '#nav'])
    check(!(await page.locator(sel).isVisible()), `${where}: ${sel} is not shown`);
  check(!(await page.evaluate(() => document.body.innerText)).includes('Signed in as'),
        `${where}: no "Signed in as"`);
}

// Every form field has a label (or an aria-label).
async function labelled(page, where) {
  const bad = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
    .filter((e) => !e.hidden && e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
    .map((e) => e.id || e.name || e.outerHTML.slice(0, 60)));
  check(bad.length === 0, `${where}: unlabelled fields: ${bad.join(', ')}`);
}

// ---------------------------------------------------------------- tenant A
{
  const s = await open('A');
  const { page } = s;
  const resp = await page.goto(cfg.url + '/');
  const h = resp.headers();
  check(/script-src 'self'/.test(h['content-security-policy'] || '') &&
        !/unsafe-inline/.test(h['content-security-policy']), 'strict Content-Security-Policy');
  check(h['x-frame-options'] === 'DENY', 'X-Frame-Options DENY');
  await labelled(page, 'sign-in');
  await signedOutHeader(page, 'before sign-in');
  await shot(page, '01-sign-in');
  await signInPassword(page, cfg.a.user, cfg.a.password);

  // overview of the whole tenant: quota and jobs
  check((await page.evaluate(() => document.body.dataset.view)) === 'overview', 'A lands on the overview');
  const quota = await text(page, '#ov-quota');
  check(quota.includes('CPUs') && quota.includes(String(cfg.a.cpus)), `the overview shows the CPU ceiling ${cfg.a.cpus}`);
  check(quota.includes('Concurrent jobs'), 'the overview lists the quota dimensions');
  const share = await text(page, '#ov-share');
  check(/Guaranteed \(entitled whenever asked\)\s+2\b/.test(share) && share.includes('Borrowed (above the guarantee'),
        `the overview shows the guaranteed share: ${share}`);
  const shareClasses = await text(page, '#ov-share-classes');
  check(/h100\.1x\s+1\s+1\s+0\s+0\s+0/.test(shareClasses), `the overview shows the guarantee of a class: ${shareClasses}`);
  const sharePools = await text(page, '#ov-share-pools');
  check(/nowhere\s+1\s+0\s+0\s+0\s+0/.test(sharePools), `the overview shows the guarantee in a pool: ${sharePools}`);
  const ovJobs = await text(page, '#ov-jobs');
  check(ovJobs.includes(cfg.a.hold_job) && ovJobs.includes('running'), 'the overview lists the running job');
  check((await text(page, '#ov-stats')).includes('Card-hours this month'), 'the overview shows this month\'s usage');
  check(/Cost this month\s+0 CHF/.test(await text(page, '#ov-stats')), `the overview's cost carries the currency: ${await text(page, '#ov-stats')}`);
  // what A holds now, by vendor and form
  const accel = await text(page, '#ov-accel');
  check(accel.includes('nvidia') && accel.includes('whole') && !accel.includes('amd'), `the overview shows holdings by vendor: ${accel}`);
  check((await text(page, '#ov-vendors')).includes('nvidia'), 'the overview shows card-hours by vendor');
  check(await page.locator('#who').isVisible() && await page.locator('#sign-out').isVisible(), 'signed in, the header shows who and Sign out');
  await shot(page, '02-a-overview');

  // the project's jobs: submit one through the form and read its queue reason
  await pickProject(page, cfg.a.project);
  check((await text(page, '#view-h')).includes(cfg.a.project), 'the project overview');
  await view(page, 'jobs');
  await labelled(page, 'jobs form');
  await page.fill('#job-name', 'amber-console-job');
  await page.selectOption('#job-class', 'a100.1x');
  await page.fill('#job-units', '1');
  await page.fill('#job-command', 'sleep 5');
  await page.click('#job-form button[type="submit"]');
  await page.waitForFunction(() => /amber-console-job/.test(document.getElementById('job-result').innerText));
  const result = await text(page, '#job-result');
  check(/queued/.test(result), `the submitted job is queued: ${result}`);
  check(/quota/i.test(result), `its queue reason names the quota: ${result}`);
  await page.waitForFunction(() => /amber-console-job/.test(document.getElementById('jobs-list').innerText));
  const row = page.locator('#jobs-list tr', { hasText: 'amber-console-job' });
  check(/quota/i.test(await row.innerText()), 'the job list shows the queue reason');
  await row.getByRole('button', { name: /^Explain/ }).click();
  await page.waitForSelector('#job-detail #explain-reason');
  check(/quota/i.test(await text(page, '#explain-reason')), 'the explanation gives the reason');
  const sugg = await page.locator('#explain-suggestions li').allTextContents();
  check(sugg.length > 0 && sugg.every((t) => /^(raise |wait for \d+ jobs? to end|submit it with|ask for at most|pool |use )/.test(t)),
        `the explanation lists the changes that would start it: ${sugg.join('|')}`);
  await shot(page, '03b-a-explain');
  // a running job's output, followed in the page: new lines appear without a click
  const holdRow = page.locator('#jobs-list tr', { hasText: cfg.a.hold_job });
  await holdRow.getByRole('button', { name: /^Logs of/ }).click();
  await page.waitForFunction(() => /tick-\d+/.test((document.getElementById('job-log') || {}).textContent || ''));
  const firstLog = await text(page, '#job-log');
  check(/following/.test(await text(page, '#job-log-state')), 'the log of a running job is followed');
  await page.waitForFunction((before) => {
    const t = (document.getElementById('job-log') || {}).textContent || '';
    return t.length > before.length && t.startsWith(before.slice(0, 10));
  }, firstLog, { timeout: 15000 }).catch(() => {});
  const laterLog = await text(page, '#job-log');
  check(laterLog.length > firstLog.length, `new output appears in the followed log without a click: ${laterLog.slice(-40)}`);
  await shot(page, '03-a-jobs');

  // usage charts of the whole tenant: by project and by model
  await pickProject(page, '');
  await view(page, 'usage');
  for (const id of ['chart-ch-project', 'chart-tok-project', 'chart-ch-model', 'chart-tok-model'])
    check(await page.locator('#' + id).count() === 1, `chart ${id} is drawn`);
  // the axis's ticks are round numbers in even steps (1, 2, 2.5 or 5 times a power of ten)
  for (const id of ['chart-ch-project', 'chart-tok-project']) {
    const ticks = (await page.locator(`#${id} text.axis[text-anchor="end"]`).allTextContents()).map(Number);
    const step = ticks[0] - ticks[1];
    const mant = step / Math.pow(10, Math.floor(Math.log10(step)));
    check(ticks.length === 5 && ticks[4] === 0 && ticks.every((t, i) => Math.abs(t - step * (4 - i)) < step * 1e-6) &&
          [1, 2, 2.5, 5].some((m) => Math.abs(mant - m) < 1e-6), `chart ${id}: round ticks (${ticks.join(', ')})`);
  }
  const chTitles = await page.locator('#chart-ch-project rect title').allTextContents();
  check(chTitles.some((t) => t.includes(cfg.a.project)), `daily card-hours show ${cfg.a.project}: ${chTitles.join('|')}`);
  const tokTitles = await page.locator('#chart-tok-model rect title').allTextContents();
  check(tokTitles.some((t) => t.includes(cfg.a.model)), `daily tokens show model ${cfg.a.model}: ${tokTitles.join('|')}`);
  check((await text(page, '#usage-totals')).includes('CHF'), 'the usage totals carry the currency');
  check((await page.locator('table th', { hasText: /^Cost \(CHF\)$/ }).count()) === 2, 'the cost columns name the currency');
  // card-hours by vendor, accelerator and form: A's cards are NVIDIA's
  const vrows = await page.locator('#usage-vendors tbody tr').allTextContents();
  check(vrows.length > 0 && vrows.every((r) => r.startsWith('nvidia')), `usage by vendor: ${vrows.join('|')}`);
  // the jobs' CPU- and memory-hours beside their card-hours, each with its cost column
  const vheads = await page.locator('#usage-vendors th').allTextContents();
  check(['CPU-hours', 'CPU cost (CHF)', 'Memory GiB-hours', 'Memory cost (CHF)'].every((c) => vheads.includes(c)),
        `usage by vendor has CPU and memory columns: ${vheads.join('|')}`);
  await shot(page, '04-a-usage');

  // keys: the secret is shown once
  await pickProject(page, cfg.a.project);
  await view(page, 'keys');
  await page.fill('#key-name', 'amber-console-key');
  await page.click('#key-form button[type="submit"]');
  await page.waitForSelector('#key-secret .secret');
  check((await text(page, '#key-secret .secret')).startsWith('sk-'), 'a new key\'s secret is shown once');
  check(!(await page.evaluate(() => JSON.stringify(sessionStorage))).includes('sk-'), 'the key secret is not stored');
  await shot(page, '05-a-keys');

  // gangs, arrays and dependencies on the jobs page (project amber-dist)
  await pickProject(page, cfg.dist.project);
  await view(page, 'jobs');
  const jobRow = (name) => page.locator('#jobs-list tbody tr').filter({ has: page.locator('td:first-child', { hasText: new RegExp('^' + name + '$') }) });
  const gangText = await jobRow(cfg.dist.gang).innerText();
  check(/gang: 2 nodes × 1/.test(gangText) && /running/.test(gangText), `the gang's shape in the list: ${gangText}`);
  const taskText = await jobRow(cfg.dist.array).first().innerText();
  check(/array \S+ task \d/.test(taskText), `an array task's shape in the list: ${taskText}`);
  const arrays = await text(page, '#jobs-arrays');
  check(arrays.includes(cfg.dist.array) && arrays.includes('0–5'), `the arrays table: ${arrays}`);
  const arrRow = await page.locator('#jobs-arrays tbody tr').first().locator('td').allTextContents();
  check(arrRow[3] === '2' && Number(arrRow[4]) + Number(arrRow[5]) + Number(arrRow[6]) + Number(arrRow[7]) === 6,
        `the array's cap (2) and its six tasks by state: ${arrRow.join('|')}`);
  const evalText = await jobRow(cfg.dist.after).innerText();
  check(evalText.includes(cfg.dist.gang + ' (ok: waiting)') && evalText.includes(cfg.dist.array + ' (any: waiting)'),
        `what the waiting job waits for: ${evalText}`);
  await jobRow(cfg.dist.gang).getByRole('button', { name: /^Details of/ }).click();
  await page.waitForSelector('#job-gang');
  const ranks = await page.locator('#job-gang tbody tr').allTextContents();
  check(ranks.length === 2 && ranks[0].startsWith('0' + cfg.dist.gang_nodes[0]) && ranks[1].startsWith('1' + cfg.dist.gang_nodes[1]),
        `each rank's node: ${ranks.join(' | ')}`);
  check((await text(page, '#job-details')).includes('2 nodes × 1 units per node'), 'the gang\'s nodes × units per node');
  await shot(page, '05b-a-jobs-gang');
  await jobRow(cfg.dist.after).getByRole('button', { name: /^Details of/ }).click();
  await page.waitForSelector('#job-deps table');
  const deps = await text(page, '#job-deps');
  check(deps.includes(cfg.dist.gang) && deps.includes('after it succeeded') && deps.includes('after it ended') && /waiting/.test(deps),
        `the dependencies, their conditions and status: ${deps}`);
  await shot(page, '05c-a-jobs-deps');
  await jobRow(cfg.dist.array).first().getByRole('button', { name: /^Details of/ }).click();
  await page.waitForSelector('#job-array');
  check(/at most 2 at once/.test(await text(page, '#job-array')), `an array task's array: ${await text(page, '#job-array')}`);

  // the reservations A's user may see: amber's, nobody else's
  await view(page, 'reservations');
  const rsvA = await text(page, '#rsv-list');
  check(rsvA.includes('amber-window') && rsvA.includes('amber-count') && rsvA.includes('daily until'),
        `A sees its tenant's reservations: ${rsvA}`);
  check(!rsvA.includes('cobalt') && !rsvA.includes('amd-firmware'), 'A sees no other tenant\'s reservation and no maintenance window');
  check(await page.locator('#rsv-nodes').count() === 0, 'A (no node reader) gets no node windows');
  await shot(page, '05d-a-reservations');
  await view(page, 'kbs');
  await view(page, 'overview');
  clean(s, 'tenant A');
  await page.click('#sign-out');
  check(!(await page.evaluate(() => sessionStorage.getItem('gpupool.token'))), 'signing out forgets the token');
  await signedOutHeader(page, 'after sign-out');
  await s.ctx.close();
}

// ---------------------------------------------------------------- tenant B
{
  const s = await open('B');
  const { page } = s;
  await signInPassword(page, cfg.b.user, cfg.b.password);
  const tenants = await page.locator('#pick-tenant option').allTextContents();
  check(tenants.length === 1 && tenants[0] === cfg.b.tenant, `B picks only its tenant: ${tenants.join(',')}`);
  const navs = await page.locator('#nav-list a').allTextContents();
  check(!navs.includes('Cluster map') && !navs.includes('Tenants'), 'B sees no platform views');
  const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const figureRes = cfg.figures.map((f) => new RegExp(`(?<![0-9a-fA-F.,])(${esc(String(f))}|${esc(Number(f).toLocaleString('en-US'))})(?![0-9a-fA-F.,])`));
  async function noLeak(where) {
    const dump = await page.evaluate(() => document.documentElement.outerHTML + '\n' + document.body.innerText +
      '\n' + JSON.stringify(sessionStorage) + '\n' + document.title + '\n' + location.href);
    for (const m of cfg.markers) check(!dump.includes(m), `${where}: tenant A's '${m}' appears for tenant B`);
    for (const re of figureRes) check(!re.test(dump), `${where}: tenant A's figure ${re} appears for tenant B`);
  }
  const projects = ['', cfg.b.project];
  let n = 6;
  for (const p of projects) {
    if ((await page.inputValue('#pick-project')) !== p) await pickProject(page, p);
    for (const v of ['overview', 'jobs', 'usage', 'keys', 'kbs', 'reservations']) {
      await view(page, v);
      await noLeak(`B ${v} ${p || '(tenant)'}`);
      if (v === 'overview' || v === 'usage' || v === 'jobs')
        await shot(page, `${String(n++).padStart(2, '0')}-b-${v}${p ? '-project' : ''}`);
    }
  }
  // B's reservations: its own, and not A's (noLeak above: no "amber" anywhere)
  await view(page, 'reservations');
  const rsvB = await text(page, '#rsv-list');
  check(rsvB.includes('cobalt-slot') && !rsvB.includes('amd-firmware'), `B sees its reservation only: ${rsvB}`);
  await noLeak('B reservations');
  await shot(page, '12-b-reservations');
  // deep links to platform views fall back; A's objects are 404 through B's token
  await page.goto(cfg.url + '/?again#cluster'); // a new document: signs in again from sessionStorage
  await settled(page, 0);
  check((await page.evaluate(() => document.body.dataset.view)) !== 'cluster', 'B cannot open the cluster map');
  await noLeak('B after #cluster');
  const probe = await page.evaluate(async (a) => {
    const tok = sessionStorage.getItem('gpupool.token');
    const r = await fetch(`/api/v1/tenants/${a.tenant}/overview`, { headers: { Authorization: 'Bearer ' + tok } });
    return { status: r.status, body: await r.text() };
  }, cfg.a);
  check(probe.status === 404 && !probe.body.includes(cfg.a.tenant), `A's overview answers B 404 (${probe.status})`);
  clean(s, 'tenant B');
  await s.ctx.close();
}

// ---------------------------------------------------------------- ops
{
  const s = await open('ops');
  const { page } = s;
  await signInPassword(page, cfg.ops.user, cfg.ops.password);
  await view(page, 'reservations');
  const list = await text(page, '#rsv-list');
  check(list.includes('amd-firmware') && !list.includes('amber') && !list.includes('cobalt'),
        `ops sees the maintenance window, no tenant's reservation: ${list}`);
  const nodes = await text(page, '#rsv-nodes');
  check(nodes.includes('sim-amd') && nodes.includes('amd-firmware') && nodes.includes('a reservation of a tenant'),
        `ops sees the node's windows, a tenant's nameless: ${nodes}`);
  check(!(await page.evaluate(() => document.documentElement.outerHTML)).includes('amber'), 'no tenant name reaches ops');
  await shot(page, '15-ops-reservations');
  clean(s, 'ops');
  await s.ctx.close();
}

// ---------------------------------------------------------------- platform admin
{
  const s = await open('admin');
  const { page } = s;
  await page.goto(cfg.url + '/');
  const before = await renders(page);
  await page.fill('#login-token', cfg.admin_token);
  await page.click('#token-form button[type="submit"]');
  await settled(page, before);
  await view(page, 'tenants');
  const ts = await text(page, '#view-body');
  check(ts.includes(cfg.a.tenant) && ts.includes(cfg.b.tenant), 'the platform admin lists every tenant');
  await view(page, 'cluster');
  const cells = page.locator('#cluster-map .gpu');
  check(await cells.count() === cfg.gpus, `the cluster map shows ${cfg.gpus} GPUs (${await cells.count()})`);
  const labels = await cells.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
  check(labels.some((l) => l.includes(`held by ${cfg.a.tenant}/${cfg.a.project}`)), `a GPU held by A: ${labels.join(' | ')}`);
  check(labels.some((l) => l.includes(`${cfg.b.tenant}/${cfg.b.project}`)), 'a GPU held by B');
  check(labels.every((l) => /healthy|degraded|failed/.test(l) && /whole|mig|shared/.test(l)), 'each GPU shows health and form');
  check((await text(page, '#cluster-map')).includes(cfg.node), 'the map names the node');
  // each card's vendor: in its spoken label, its cell and its node's heading
  const vendors = await cells.evaluateAll((els) => els.map((e) => [e.closest('section').getAttribute('aria-label'),
    e.dataset.vendor, e.querySelector('.vendor') ? e.querySelector('.vendor').textContent : '', e.getAttribute('aria-label')]));
  for (const [node, want] of Object.entries(cfg.vendors)) {
    const mine = vendors.filter(([sec]) => sec === 'Node ' + node);
    check(mine.length > 0 && mine.every(([, v, shown, label]) => v === want && shown === 'vendor: ' + want &&
      label.includes(' ' + want + ' ')), `every GPU of ${node} shows vendor ${want}: ${JSON.stringify(mine)}`);
    const sec = page.locator(`#cluster-map section[aria-label="Node ${node}"]`);
    check(await sec.getAttribute('data-vendors') === want && (await sec.locator('h3').textContent()).includes(want),
      `the heading of ${node} names ${want}`);
  }
  const summary = await text(page, '#cluster-summary');
  check(Object.values(cfg.vendors).every((v) => summary.includes(v)), `the summary counts GPUs per vendor: ${summary}`);
  check((await text(page, '#cluster-map section[aria-label="Node sim-amd"]')).includes('Maintenance amd-firmware (upcoming)'),
        'the cluster map shows the node\'s next maintenance window');
  await shot(page, '20-admin-cluster');
  await view(page, 'reservations');
  const all = await text(page, '#rsv-list');
  check(['amber-window', 'amber-count', 'cobalt-slot', 'amd-firmware'].every((r) => all.includes(r)), `the admin sees every reservation: ${all}`);
  const wins = await page.locator('#rsv-nodes tbody tr').allTextContents();
  check(wins.length === 2 && wins[0].includes('amd-firmware') && wins[1].includes('amber-window') && wins[1].includes('tenant-amber / amber-train'),
        `the admin sees each window on sim-amd, in time order: ${wins.join(' | ')}`);
  await shot(page, '22-admin-reservations');
  await view(page, 'health');
  const heads = await page.locator('#view-body th').allTextContents();
  check(heads.includes('Vendor') && heads.includes('Model'), `the GPU table has vendor and model columns: ${heads.join('|')}`);
  await view(page, 'alarms');
  await view(page, 'workorders');
  await shot(page, '21-admin-workorders');
  clean(s, 'platform admin');
  await s.ctx.close();
}

await browser.close();
console.log(`console: ${passed} checks passed, 0 failed`);
