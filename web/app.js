// app.js - the gpupool web console: one page, plain DOM, no framework, no
// external assets.  It is a client of /api/v1 like the CLI: it signs in
// (POST /api/v1/login, or a pasted token), keeps the token in this tab's
// sessionStorage, and shows only what the API answers for that token.
//
// Safety: server data is rendered with textContent / createTextNode only
// (the h() helper below); nothing is ever assigned to innerHTML.  The page
// runs under a strict Content-Security-Policy (no inline script or style):
// sizes are set through the CSSOM (el.style.width) and SVG attributes.
'use strict';

const TOKEN_KEY = 'gpupool.token';
const PICK_KEY = 'gpupool.pick';
const S = { me: null, tenants: [], projects: [], tenant: '', project: '', global: new Set(),
            view: 'overview', currency: '' };

// ---------------------------------------------------------------- DOM helpers

// h('tag', {attr: value, class: 'x', on: {click: fn}}, child...) -> element.
// Children: nodes, strings/numbers (as text), arrays, null/false (skipped).
function h(tag, attrs, ...kids) {
  const svg = ['svg', 'rect', 'line', 'text', 'g', 'title'].includes(tag);
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag)
                 : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}
function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}
const $ = (id) => document.getElementById(id);
function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

function say(msg, isError) {
  const st = $('status');
  st.textContent = msg || '';
  st.className = 'status' + (isError ? ' error' : '');
}

function fmt(n, digits) {
  if (n === null || n === undefined) return '—';
  if (typeof n !== 'number') return String(n);
  const d = digits === undefined ? (Number.isInteger(n) ? 0 : 2) : digits;
  return n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 });
}
// A cost with its currency: the report's, else the rate card in force now (S.currency, read at
// sign-in); with no rate card at all, say so rather than print a bare number.
function money(n, currency) {
  const c = currency || S.currency;
  return fmt(n || 0, 2) + (c ? ' ' + c : ' (no rate card)');
}
function when(t) { return t ? String(t).replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—'; }

function table(caption, cols, rows) {
  return h('table', {},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', {}, cols.map((c) => {
      const v = c.get(r);
      return h('td', { class: c.num ? 'num' : (c.cls ? c.cls(r) : null) }, v instanceof Node ? v : fmt(v));
    }))) : h('tr', {}, h('td', { colspan: cols.length, class: 'hint' }, 'None.'))));
}

function field(id, label, input) {
  input.id = id;
  return h('p', {}, h('label', { for: id }, label), ' ', input);
}

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (tok) headers.Authorization = 'Bearer ' + tok;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                                  credentials: 'omit', cache: 'no-store' });
  let data = null;
  const text = await res.text();
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!res.ok) {
    const e = data && data.error ? data.error : {};
    if (res.status === 401 && path !== '/api/v1/login') signOut('Your session ended; sign in again.');
    throw new ApiError(res.status, e.code || 'http_' + res.status, e.message || res.statusText);
  }
  return data;
}
const enc = encodeURIComponent;
const tpath = () => '/api/v1/tenants/' + enc(S.tenant);
const ppath = () => tpath() + '/projects/' + enc(S.project);

// ---------------------------------------------------------------- sign in / out

async function signIn(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
  try {
    S.me = await api('GET', '/api/v1/whoami');
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    say(e.status === 401 ? 'That token is not valid.' : e.message, true);
    return;
  }
  S.global = new Set(S.me.roles.filter((r) => r.scope === 'global').map((r) => r.role));
  await loadScopes();
  S.currency = await currentCurrency();
  $('who-name').textContent = S.me.name;
  $('who').hidden = false;
  $('nav').hidden = false;
  buildNav();
  say('');
  const start = location.hash.slice(1);
  go(views[start] && allowed(start) ? start : firstView());
}

// The currency of the rate card in force now (the newest whose effective_from has passed, else
// the first to come); '' when there is none or it cannot be read.
async function currentCurrency() {
  try {
    const cards = (await api('GET', '/api/v1/rate-cards')).items || [];
    const now = Date.now();
    const past = cards.filter((c) => Date.parse(c.effective_from) <= now);
    const card = past.length ? past[past.length - 1] : cards[0];
    return (card && card.currency) || '';
  } catch (e) {
    return '';
  }
}

function signOut(msg) {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(PICK_KEY);
  S.me = null; S.tenants = []; S.projects = []; S.tenant = ''; S.project = ''; S.global = new Set();
  S.currency = '';
  $('who').hidden = true;
  $('nav').hidden = true;
  clear($('nav-list'));
  clear($('pick-tenant'));
  clear($('pick-project'));
  history.replaceState(null, '', location.pathname);
  renderSignIn();
  say(msg || 'Signed out.', Boolean(msg));
}

const isPlatform = () => S.global.has('platform-admin') || S.global.has('security-admin');
const isOps = () => isPlatform() || S.global.has('ops-engineer');
function tenantRole() {
  return S.me.roles.find((r) => r.scope === 'tenant' && r.tenant === S.tenant) || null;
}
const readsTenant = () => isPlatform() || Boolean(tenantRole());

// Tenants and projects the caller may pick: every tenant for platform roles, else those its roles name.
async function loadScopes() {
  const names = new Set();
  if (isPlatform()) {
    try { (await api('GET', '/api/v1/tenants')).items.forEach((t) => names.add(t.name)); } catch (e) { /* none */ }
  }
  for (const r of S.me.roles) if (r.tenant) names.add(r.tenant);
  S.tenants = [...names].sort();
  const saved = JSON.parse(sessionStorage.getItem(PICK_KEY) || '{}');
  S.tenant = S.tenants.includes(saved.tenant) ? saved.tenant : (S.tenants[0] || '');
  await loadProjects(saved.project);
  fillPickers();
}

async function loadProjects(want) {
  const names = new Set();
  if (S.tenant) {
    if (readsTenant()) {
      try { (await api('GET', tpath() + '/projects')).items.forEach((p) => names.add(p.name)); } catch (e) { /* none */ }
    }
    for (const r of S.me.roles) if (r.tenant === S.tenant && r.project) names.add(r.project);
  }
  S.projects = [...names].sort();
  S.project = S.projects.includes(want) ? want : (readsTenant() ? '' : (S.projects[0] || ''));
}

function fillPickers() {
  const pt = clear($('pick-tenant')), pp = clear($('pick-project'));
  if (!S.tenants.length) pt.appendChild(h('option', { value: '' }, '(no tenant)'));
  for (const t of S.tenants) pt.appendChild(h('option', { value: t, selected: t === S.tenant }, t));
  if (readsTenant() || !S.projects.length) pp.appendChild(h('option', { value: '', selected: !S.project }, readsTenant() ? '(whole tenant)' : '(none)'));
  for (const p of S.projects) pp.appendChild(h('option', { value: p, selected: p === S.project }, p));
  sessionStorage.setItem(PICK_KEY, JSON.stringify({ tenant: S.tenant, project: S.project }));
}

// ---------------------------------------------------------------- navigation

const views = {
  overview: { label: 'Overview', render: viewOverview, scoped: true },
  jobs: { label: 'Jobs', render: viewJobs, scoped: true },
  usage: { label: 'Usage', render: viewUsage, scoped: true },
  keys: { label: 'Keys', render: viewKeys, scoped: true },
  kbs: { label: 'Knowledge bases', render: viewKbs, scoped: true },
  reservations: { label: 'Reservations', render: viewReservations, anyone: true },
  tenants: { label: 'Tenants', render: viewTenants, platform: true },
  cluster: { label: 'Cluster map', render: viewCluster, ops: true },
  health: { label: 'Health', render: viewHealth, ops: true },
  alarms: { label: 'Alarms', render: viewAlarms, ops: true },
  workorders: { label: 'Work orders', render: viewWorkOrders, ops: true },
};
function allowed(name) {
  const v = views[name];
  if (v.platform) return isPlatform();
  if (v.ops) return isOps();
  if (v.anyone) return S.tenants.length > 0 || isOps();
  return S.tenants.length > 0;
}
function firstView() { return Object.keys(views).find(allowed) || 'overview'; }

function buildNav() {
  const ul = clear($('nav-list'));
  let group = null;
  for (const [name, v] of Object.entries(views)) {
    if (!allowed(name)) continue;
    const g = v.platform ? 'admin' : v.ops ? 'ops' : 'tenant';
    if (group && g !== group) ul.appendChild(h('li', { class: 'sep', 'aria-hidden': 'true' }));
    group = g;
    ul.appendChild(h('li', {}, h('a', { href: '#' + name, id: 'nav-' + name, 'data-view': name,
      on: { click: (ev) => { ev.preventDefault(); go(name); } } }, v.label)));
  }
}

async function go(name) {
  if (!views[name] || !allowed(name)) name = firstView();
  S.view = name;
  if (location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
  for (const a of document.querySelectorAll('#nav-list a'))
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  const main = clear($('view'));
  const heading = h('h2', { id: 'view-h', tabindex: '-1' }, views[name].label +
    (views[name].scoped && S.tenant ? ' — ' + S.tenant + (S.project ? ' / ' + S.project : '') : ''));
  const body = h('div', { id: 'view-body', 'aria-busy': 'true' });
  main.appendChild(h('section', { 'aria-labelledby': 'view-h' }, heading, body));
  heading.focus();
  say('');
  try {
    if (views[name].scoped && !S.tenant) body.appendChild(h('p', {}, 'You hold no role in any tenant.'));
    else await views[name].render(body);
  } catch (e) {
    say(e.message, true);
    body.appendChild(h('p', { class: 'hint' }, 'Could not load this view: ' + e.message));
  }
  body.setAttribute('aria-busy', 'false');
  document.body.dataset.view = name;
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
}
const rerender = () => go(S.view);

// ---------------------------------------------------------------- overview

function quotaTable(q) {
  const names = { gpus: 'GPUs (card-equivalents)', gpu_memory_gib: 'GPU memory (GiB)', cpus: 'CPUs',
                  memory_gib: 'Memory (GiB)', concurrent_jobs: 'Concurrent jobs',
                  card_hours_month: 'Card-hours this month' };
  const rows = Object.keys(names).map((k) => ({ k, label: names[k], ...q[k] }));
  for (const [c, v] of Object.entries(q.class_gpus || {})) rows.push({ k: c, label: 'Class ' + c + ' (units)', ...v });
  const meter = (r) => {
    if (r.limit === null || r.limit === undefined) return h('span', { class: 'hint' }, 'no ceiling');
    const pct = r.limit > 0 ? Math.min(100, (100 * r.used) / r.limit) : 100;
    const fill = h('span', {});
    fill.style.width = pct.toFixed(1) + '%';
    return h('div', { class: 'bar' + (pct >= 100 ? ' full' : ''), role: 'img',
                      'aria-label': fmt(pct, 0) + '% used' }, fill);
  };
  return table('Quota and allocation', [
    { label: 'Dimension', get: (r) => r.label },
    { label: 'Ceiling', num: true, get: (r) => r.limit },
    { label: 'In use', num: true, get: (r) => r.used },
    { label: 'Available', num: true, get: (r) => (r.available === null ? '—' : r.available) },
    { label: 'Use', get: meter },
  ], rows);
}

function jobsTable(items, caption) {
  return table(caption, [
    { label: 'Job', get: (j) => j.name },
    { label: 'Project', get: (j) => j.project },
    { label: 'Class', get: (j) => j.class + ' × ' + j.units },
    { label: 'State', get: (j) => j.state, cls: (j) => 'state-' + j.state },
    { label: 'Queue reason', get: (j) => j.reason || '—', cls: () => 'reason' },
    { label: 'Submitter', get: (j) => j.submitter },
  ], items);
}

async function viewOverview(body) {
  const o = await api('GET', S.project ? ppath() + '/overview' : tpath() + '/overview');
  const stats = [];
  if (o.jobs) {
    stats.push(['Running jobs', o.jobs.running], ['Queued jobs', o.jobs.queued + o.jobs.admitted]);
  }
  if (o.usage) {
    stats.push(['Card-hours this month', fmt(o.usage.card_hours, 3)], ['Tokens this month', fmt(o.usage.tokens)],
               ['Cost this month', money(o.usage.cost, o.usage.currency)]);
  }
  if (o.alarms) stats.push(['Open alarms', o.alarms.open]);
  body.appendChild(h('p', {}, o.display_name && o.display_name !== o.tenant ? o.display_name + ' · ' : '',
                     o.project ? 'project ' + o.project + ' (' + o.class + ')' : 'tenant ' + o.tenant,
                     ' · as of ' + when(o.as_of)));
  body.appendChild(h('div', { class: 'grid', id: 'ov-stats' }, stats.map(([l, v]) =>
    h('div', { class: 'card' }, h('div', { class: 'stat-label' }, l), h('div', { class: 'stat' }, fmt(v))))));
  body.appendChild(h('h3', {}, 'Quota'));
  body.appendChild(h('div', { id: 'ov-quota' }, quotaTable(o.quota)));
  if (o.share && o.share.applies) {
    // its guaranteed share: its own figures only, never who borrows from it
    const s = o.share, gpus = (v) => (v === null || v === undefined ? 'none' : fmt(v, 3));
    body.appendChild(h('h3', {}, 'Guaranteed share'));
    body.appendChild(h('div', { id: 'ov-share' }, table(null, [
      { label: 'Figure', get: (r) => r[0] }, { label: 'GPUs', num: true, get: (r) => r[1] }], [
      ['Guaranteed (entitled whenever asked)', gpus(s.guaranteed_gpus)],
      ['Kept from lending', gpus(s.kept_gpus)],
      ['In use', gpus(s.in_use_gpus)],
      ['Borrowed (above the guarantee, preemptible)', gpus(s.borrowed_gpus)],
      ['Lent to others (of the idle guarantee)', gpus(s.lent_gpus)],
      ['Borrowed recently (GPU-hours, half-life ' + fmt(s.borrow_half_life_seconds / 3600, 2) + ' h)',
       fmt(s.recent_borrowed_gpu_hours, 3)],
      ['Weight among borrowers', fmt(s.borrow_weight)]])));
    if (s.class_guarantees && s.class_guarantees.length) {
      // a guarantee of one resource class: that class's work counts against it alone
      body.appendChild(h('div', { id: 'ov-share-classes' }, table(null, [
        { label: 'Class', get: (c) => c.class }, { label: 'Guaranteed', num: true, get: (c) => gpus(c.guaranteed_gpus) },
        { label: 'Kept', num: true, get: (c) => gpus(c.kept_gpus) }, { label: 'In use', num: true, get: (c) => gpus(c.in_use_gpus) },
        { label: 'Borrowed', num: true, get: (c) => gpus(c.borrowed_gpus) },
        { label: 'Lent', num: true, get: (c) => gpus(c.lent_gpus) }], s.class_guarantees)));
    }
    if (s.pool_guarantees && s.pool_guarantees.length) {
      // a guarantee in one pool: the work that runs there (of classes without their own)
      body.appendChild(h('div', { id: 'ov-share-pools' }, table(null, [
        { label: 'Pool', get: (c) => c.pool }, { label: 'Guaranteed', num: true, get: (c) => gpus(c.guaranteed_gpus) },
        { label: 'Kept', num: true, get: (c) => gpus(c.kept_gpus) }, { label: 'In use', num: true, get: (c) => gpus(c.in_use_gpus) },
        { label: 'Borrowed', num: true, get: (c) => gpus(c.borrowed_gpus) },
        { label: 'Lent', num: true, get: (c) => gpus(c.lent_gpus) }], s.pool_guarantees)));
    }
  }
  if (o.accelerators && o.accelerators.length) {
    body.appendChild(h('h3', {}, 'Held now, by vendor'));
    body.appendChild(h('div', { id: 'ov-accel' }, table(null, [
      { label: 'Vendor', get: (a) => a.vendor, cls: () => 'vendor' }, { label: 'Model', get: (a) => a.model },
      { label: 'Form', get: (a) => a.form }, { label: 'GPUs held', num: true, get: (a) => fmt(a.gpus, 3) },
      { label: 'Cards', num: true, get: (a) => a.cards }], o.accelerators)));
  }
  if (o.usage && o.usage.by_vendor && o.usage.by_vendor.length) {
    body.appendChild(h('h3', {}, 'Card-hours this month, by vendor'));
    body.appendChild(h('div', { id: 'ov-vendors' }, table(null, [
      { label: 'Vendor', get: (v) => v.vendor, cls: () => 'vendor' },
      { label: 'Card-hours', num: true, get: (v) => fmt(v.card_hours, 3) },
      { label: 'Cost', num: true, get: (v) => money(v.card_hour_cost, o.usage.currency) }], o.usage.by_vendor)));
  }
  if (o.projects) {
    body.appendChild(h('h3', {}, 'Projects'));
    body.appendChild(table(null, [
      { label: 'Project', get: (p) => p.name }, { label: 'Class', get: (p) => p.class },
      { label: 'Live jobs', num: true, get: (p) => p.jobs }, { label: 'GPUs held', num: true, get: (p) => p.gpus },
      { label: 'Card-hours this month', num: true, get: (p) => fmt(p.card_hours_month, 3) }], o.projects));
  }
  if (o.jobs) {
    body.appendChild(h('h3', {}, 'Running and queued jobs'));
    body.appendChild(h('div', { id: 'ov-jobs' }, jobsTable(o.jobs.items, null)));
  }
  if (o.models) {
    body.appendChild(h('h3', {}, 'Model services'));
    body.appendChild(table(null, [
      { label: 'Model', get: (m) => m.name }, { label: 'Visibility', get: (m) => m.visibility },
      { label: 'Endpoints', num: true, get: (m) => m.endpoints }, { label: 'Healthy', num: true, get: (m) => m.healthy }],
    o.models));
  }
  if (o.alarms) {
    body.appendChild(h('h3', {}, 'Alarms on your resources'));
    body.appendChild(alarmTable(o.alarms.items, false));
  }
  if (o.omitted && o.omitted.length)
    body.appendChild(h('p', { class: 'hint' }, 'Not shown to your role: ' + o.omitted.join(', ') + '.'));
}

// ---------------------------------------------------------------- jobs

async function viewJobs(body) {
  if (!S.project) {
    body.appendChild(h('p', {}, 'Pick a project above to see and submit its jobs.'));
    return;
  }
  const [jobs, classes, prios] = await Promise.all([
    api('GET', ppath() + '/jobs'),
    api('GET', '/api/v1/classes').catch(() => ({ items: [] })),
    api('GET', '/api/v1/priority-classes').catch(() => ({ items: [] })),
  ]);
  const out = h('div', { id: 'job-result', role: 'status', 'aria-live': 'polite' });
  const detail = h('div', { id: 'job-detail' });
  const form = h('form', { id: 'job-form', class: 'card inline', 'aria-labelledby': 'job-form-h' },
    h('h3', { id: 'job-form-h' }, 'Submit a job'),
    field('job-name', 'Name', h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9\\-]*', value: 'job-' + Date.now().toString(36) })),
    field('job-class', 'Resource class', h('select', { name: 'class', required: true },
      classes.items.map((c) => h('option', { value: c.name }, c.name)))),
    field('job-units', 'Units', h('input', { name: 'units', type: 'number', min: '1', max: '64', value: '1' })),
    field('job-prio', 'Priority class', h('select', { name: 'priority_class' },
      h('option', { value: '' }, '(default)'), prios.items.map((p) => h('option', { value: p.name }, p.name)))),
    field('job-command', 'Command', h('input', { name: 'command', value: 'sleep 60', size: '30' })),
    h('p', {}, h('button', { type: 'submit' }, 'Submit')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const spec = { name: f.get('name'), class: f.get('class'), units: Number(f.get('units') || 1),
                   command: String(f.get('command') || '').trim().split(/\s+/).filter(Boolean) };
    if (f.get('priority_class')) spec.priority_class = f.get('priority_class');
    try {
      let j = await api('POST', ppath() + '/jobs', spec);
      // the server answers before its scheduler looked at the job: show the first reason
      for (let i = 0; i < 100 && j.reason === 'waiting for the scheduler'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        j = await api('GET', ppath() + '/jobs/' + encodeURIComponent(j.id));
      }
      clear(out).appendChild(h('p', { class: 'card' }, 'Submitted ', h('strong', {}, j.name), ' (' + j.id + '): ',
        h('span', { class: 'state-' + j.state }, j.state), j.reason ? ' — ' : '', h('span', { class: 'reason' }, j.reason || '')));
      await refreshJobs();
    } catch (e) { clear(out).appendChild(h('p', { class: 'card status error' }, 'Not submitted: ' + e.message)); }
  });
  const list = h('div', { id: 'jobs-list' });
  const arrays = h('div', { id: 'jobs-arrays' });
  const refreshJobs = async (items) => {
    const js = items || (await api('GET', ppath() + '/jobs')).items;
    // what the jobs still waiting for others wait for (the list does not carry it; job show
    // does): read for those waiting, at most 50
    const waiting = js.filter((j) => j.state === 'queued' && /dependenc/.test(j.reason || '')).slice(0, 50);
    const after = {};
    await Promise.all(waiting.map(async (j) => {
      try { after[j.id] = (await api('GET', ppath() + '/jobs/' + enc(j.id))).after || []; } catch (e) { /* gone */ }
    }));
    await arraySummary(arrays, js);
    clear(list).appendChild(table('Jobs of ' + S.project, [
      { label: 'Job', get: (j) => j.name }, { label: 'Id', get: (j) => j.id },
      { label: 'Class', get: (j) => j.class + ' × ' + j.units },
      { label: 'Shape', get: (j) => jobShape(j), cls: () => 'shape' },
      { label: 'State', get: (j) => j.state, cls: (j) => 'state-' + j.state },
      { label: 'Queue reason', get: (j) => j.reason || '—', cls: () => 'reason' },
      { label: 'Waits for', get: (j) => (after[j.id] && after[j.id].length ? depText(after[j.id]) : '—'), cls: () => 'deps' },
      { label: 'Submitted', get: (j) => when(j.created_at) },
      { label: 'Actions', get: (j) => h('span', {},
          h('button', { type: 'button', class: 'secondary', 'aria-label': 'Details of ' + j.name, on: { click: () => details(j) } }, 'Details'), ' ',
          h('button', { type: 'button', class: 'secondary', 'aria-label': 'Explain ' + j.name, on: { click: () => explain(j) } }, 'Explain'), ' ',
          h('button', { type: 'button', class: 'secondary', 'aria-label': 'Logs of ' + j.name, on: { click: () => logs(j) } }, 'Logs'), ' ',
          ['queued', 'admitted', 'running'].includes(j.state)
            ? h('button', { type: 'button', class: 'danger', 'aria-label': 'Cancel ' + j.name, on: { click: () => cancel(j) } }, 'Cancel') : null) },
    ], js));
  };
  // A job's shape in full: a gang's ranks and their nodes, an array task's array, what it runs after.
  const details = async (j) => {
    try {
      const x = await api('GET', ppath() + '/jobs/' + enc(j.id));
      const sec = h('section', { class: 'card', id: 'job-details', 'aria-label': 'Details' }, h('h3', {}, 'Job ' + x.name + ' (' + x.id + ')'),
        h('p', {}, x.class + ' × ' + x.units + ' · ' + jobShape(x) + ' · ' + x.state + (x.reason ? ' — ' + x.reason : '')));
      if (x.nodes) {
        const K = x.units_per_node || 1;
        const ranks = [];
        for (let r = 0; r < x.nodes; r++) ranks.push({ rank: r, units: [], nodes: new Set(), cards: 0 });
        for (const b of x.bindings || []) {
          if (b.end && x.state === 'running') continue; // an earlier placement's
          const rk = ranks[Math.floor(b.unit / K)];
          if (!rk) continue;
          if (!rk.units.includes(b.unit)) rk.units.push(b.unit);
          rk.nodes.add(b.node); rk.cards++;
        }
        sec.appendChild(h('h4', {}, 'Gang: ' + x.nodes + ' nodes × ' + K + ' units per node'));
        sec.appendChild(h('div', { id: 'job-gang' }, table(null, [
          { label: 'Rank', num: true, get: (r) => r.rank },
          { label: 'Node', get: (r) => (r.nodes.size ? [...r.nodes].join(', ') : 'not placed') },
          { label: 'Units', get: (r) => (r.units.length ? r.units.sort((a, b) => a - b).join(', ') : (r.rank * K) + '…' + (r.rank * K + K - 1)) },
          { label: 'Cards', num: true, get: (r) => r.cards }], ranks)));
      }
      if (x.array) {
        let a = null;
        try { a = await api('GET', ppath() + '/arrays/' + enc(x.array.id)); } catch (e) { /* not readable */ }
        sec.appendChild(h('h4', {}, 'Array'));
        sec.appendChild(h('p', { id: 'job-array' }, 'Task ' + x.array.index + ' of array ' + x.array.id +
          (a ? ' (' + a.first_index + '–' + a.last_index + ', ' + a.size + ' tasks; ' +
               (a.max_running ? 'at most ' + a.max_running + ' at once' : 'no cap') + '; ' + taskCounts(a.tasks) + ')' : '')));
      }
      sec.appendChild(h('h4', {}, 'Dependencies'));
      sec.appendChild(h('div', { id: 'job-deps' }, x.after && x.after.length ? table(null, [
        { label: 'After job', get: (d) => d.name }, { label: 'Id', get: (d) => d.job },
        { label: 'Condition', get: (d) => depKind(d.kind) }, { label: 'Its state', get: (d) => d.state, cls: (d) => 'state-' + d.state },
        { label: 'Status', get: (d) => d.status }], x.after) : h('p', { class: 'hint' }, 'It runs after no other job.')));
      clear(detail).appendChild(sec);
    } catch (e) { say(e.message, true); }
  };
  const explain = async (j) => {
    try {
      const x = await api('GET', ppath() + '/jobs/' + enc(j.id) + '/explain');
      // the reason, then each change the scheduler checked would start it (its own words; a
      // change without them as its fields), then the whole answer for the curious
      const sugg = Array.isArray(x.suggestions) ? x.suggestions : [];
      const words = (sg) => sg.text || sg.change + ': ' + Object.entries(sg)
        .filter(([k]) => k !== 'change' && k !== 'suggestion').map(([k, v]) => k + ' ' + (typeof v === 'object' ? JSON.stringify(v) : v)).join(', ');
      clear(detail).appendChild(h('section', { class: 'card', 'aria-label': 'Explanation' }, h('h3', {}, 'Why is ' + j.name + ' ' + j.state + '?'),
        h('p', { id: 'explain-reason' }, x.reason || j.reason || x.state || j.state),
        x.state === 'queued' || x.state === 'admitted' || sugg.length
          ? (sugg.length ? h('div', {}, h('h4', {}, 'What would start it (each checked against the scheduler)'),
                             h('ul', { id: 'explain-suggestions' }, sugg.map((sg) => h('li', {}, words(sg)))))
                         : h('p', { class: 'hint', id: 'explain-suggestions' }, 'No change was found that would start it now.'))
          : '',
        h('details', {}, h('summary', {}, 'The whole answer (JSON)'), h('pre', {}, JSON.stringify(x, null, 2)))));
    } catch (e) { say(e.message, true); }
  };
  // A job's output, followed: read again every second until the job has ended, or until this
  // section is replaced (another job's logs or explanation, another view, sign-out).
  const logs = async (j) => {
    const state = h('p', { id: 'job-log-state' }, 'Reading…');
    const pre = h('pre', { id: 'job-log', tabindex: '0', 'aria-label': 'Output of ' + j.name }, '');
    clear(detail).appendChild(h('section', { class: 'card', 'aria-label': 'Logs' }, h('h3', {}, 'Output of ' + j.name), state, pre));
    for (;;) {
      let x;
      try { x = await api('GET', ppath() + '/jobs/' + enc(j.id) + '/logs'); }
      catch (e) { if (document.contains(pre)) say(e.message, true); return; }
      if (!document.contains(pre)) return;
      const ended = ['succeeded', 'failed', 'cancelled', 'preempted'].includes(x.state);
      state.textContent = 'State: ' + x.state + ' · exit code: ' +
        (x.exit_code === null || x.exit_code === undefined ? '—' : x.exit_code) +
        (ended ? '' : ' · following (read every second)');
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      const text = x.log || '(no output yet)';
      if (pre.textContent !== text) pre.textContent = text;
      if (atEnd) pre.scrollTop = pre.scrollHeight; // stay at the newest line unless scrolled up
      if (ended) return;
      await new Promise((r) => setTimeout(r, 1000));
      if (!document.contains(pre)) return;
    }
  };
  const cancel = async (j) => {
    try { await api('POST', ppath() + '/jobs/' + enc(j.id) + '/cancel', {}); say('Cancelled ' + j.name + '.'); await refreshJobs(); }
    catch (e) { say(e.message, true); }
  };
  body.append(form, out, arrays, list, detail);
  await refreshJobs(jobs.items);
}

// A job's shape: a gang (nodes × units per node), an array's task, or its units anywhere.
function jobShape(j) {
  const parts = [];
  if (j.nodes) parts.push('gang: ' + j.nodes + ' nodes × ' + j.units_per_node);
  if (j.array) parts.push('array ' + String(j.array.id).slice(0, 8) + ' task ' + j.array.index);
  return parts.length ? parts.join(' · ') : 'single';
}
const depKind = (k) => ({ ok: 'after it succeeded', any: 'after it ended', notok: 'after it failed' }[k] || k);
function depText(after) {
  return after.map((d) => d.name + ' (' + d.kind + ': ' + d.status + ')').join(', ');
}
function taskCounts(t) {
  return Object.entries(t || {}).filter(([, n]) => n > 0).map(([k, n]) => n + ' ' + k).join(', ') || 'no tasks';
}

// The arrays among the listed jobs: each one's size, cap and tasks by state (GET …/arrays/{id}).
async function arraySummary(el, jobs) {
  const ids = [...new Set(jobs.filter((j) => j.array).map((j) => j.array.id))].slice(0, 20);
  clear(el);
  if (!ids.length) return;
  const as = (await Promise.all(ids.map((id) => api('GET', ppath() + '/arrays/' + enc(id)).catch(() => null)))).filter(Boolean);
  const states = ['queued', 'admitted', 'running', 'succeeded', 'failed', 'cancelled', 'preempted'];
  el.appendChild(table('Arrays', [
    { label: 'Array', get: (a) => a.name }, { label: 'Id', get: (a) => a.id },
    { label: 'Indexes', get: (a) => a.first_index + '–' + a.last_index },
    { label: 'Running at most', num: true, get: (a) => (a.max_running ? a.max_running : 'no cap') },
    ...states.map((st) => ({ label: st[0].toUpperCase() + st.slice(1), num: true, get: (a) => (a.tasks || {})[st] || 0 })),
  ], as));
}

// ---------------------------------------------------------------- reservations

// What a reservation holds, in words.
function rsvHolds(r) {
  return r.nodes && r.nodes.length ? 'nodes ' + r.nodes.join(', ') : r.count + ' × ' + r.class + ' in pool ' + r.pool;
}
function rsvRecurrence(r) {
  if (!r.recurrence || r.recurrence === 'none') return 'once';
  const how = r.recurrence === 'weekdays' ? 'on ' + (r.weekdays || []).join(', ')
            : r.recurrence === 'every' ? 'every ' + r.every_seconds + ' s' : r.recurrence;
  return how + ' until ' + when(r.until);
}

async function viewReservations(body) {
  const rs = (await api('GET', '/api/v1/reservations')).items;
  body.appendChild(h('p', { class: 'hint' }, isPlatform() ? 'Every reservation and maintenance window.'
    : (S.tenants.length ? 'The reservations of your tenants' + (isOps() ? ' and the maintenance windows' : '')
                        : 'The maintenance windows') + ': others are not shown.'));
  body.appendChild(h('div', { id: 'rsv-list' }, table('Reservations and maintenance windows', [
    { label: 'Name', get: (r) => r.name },
    { label: 'Kind', get: (r) => r.kind },
    { label: 'Holder', get: (r) => (r.kind === 'maintenance' ? 'nobody (maintenance)' : r.tenant + (r.project ? ' / ' + r.project : '')) },
    { label: 'Holds', get: rsvHolds },
    { label: 'State', get: (r) => r.state, cls: (r) => 'rsv-' + r.state },
    { label: 'Now or next', get: (r) => (r.current ? when(r.current.start) + ' → ' + when(r.current.end) : '—') },
    { label: 'Recurrence', get: rsvRecurrence },
    { label: 'Then', get: (r) => (r.occurrences || []).slice(1).map((o) => when(o.start)).join(', ') || '—' },
    { label: 'At the end', get: (r) => (r.kind === 'maintenance' ? 'drain ' + r.drain_before_seconds + ' s before' +
        (r.work_orders && r.work_orders.length ? '; work orders ' + r.work_orders.join(', ') : '') : 'its jobs: ' + r.end_policy) },
  ], rs)));
  if (!isOps()) return;
  // the nodes' windows ahead (GET /api/v1/nodes: maintenance and tenants' reservations on each)
  const nodes = (await api('GET', '/api/v1/nodes')).items;
  const rows = [];
  for (const n of nodes) {
    for (const m of n.maintenance || []) rows.push({ node: n.name, kind: 'maintenance', name: m.reservation, holder: 'nobody', ...m });
    for (const r of n.reservations || [])
      rows.push({ node: n.name, kind: 'tenant', name: r.reservation || 'a reservation of a tenant',
                  holder: r.tenant ? r.tenant + (r.project ? ' / ' + r.project : '') : '—', ...r });
  }
  rows.sort((a, b) => String(a.start).localeCompare(String(b.start)) || a.node.localeCompare(b.node));
  body.appendChild(h('h3', {}, 'Windows on nodes'));
  body.appendChild(h('div', { id: 'rsv-nodes' }, table('The next window of each reservation on each node', [
    { label: 'Node', get: (w) => w.node }, { label: 'Kind', get: (w) => w.kind }, { label: 'Reservation', get: (w) => w.name },
    { label: 'Holder', get: (w) => w.holder }, { label: 'Start', get: (w) => when(w.start) }, { label: 'End', get: (w) => when(w.end) },
    { label: 'State', get: (w) => w.state, cls: (w) => 'rsv-' + w.state },
    { label: 'Work orders', get: (w) => (w.work_orders && w.work_orders.length ? w.work_orders.join(', ') : '—') }], rows)));
}

// ---------------------------------------------------------------- usage charts

// The smallest of 1, 2, 2.5, 5 times a power of ten that is at least x (> 0).
function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x * (1 - 1e-9)) return m * p;
  return 10 * p;
}

// An axis label for a multiple of `step`: as many decimals as the step needs, no float noise.
function tick(v, step) {
  const dec = Math.max(0, -Math.floor(Math.log10(step)) + (String(step / Math.pow(10, Math.floor(Math.log10(step)))).includes('.') ? 1 : 0));
  return v.toFixed(Math.min(dec, 8));
}

// A stacked bar chart of `series` ({key: {day: value}}) over `days`, drawn as SVG.
function barChart(id, title, unit, days, series) {
  const keys = Object.keys(series).sort();
  const W = 760, H = 240, L = 56, B = 28, T = 10, R = 10;
  const totals = days.map((d) => keys.reduce((s, k) => s + (series[k][d] || 0), 0));
  // the axis's top: four round steps (1, 2, 2.5 or 5 times a power of ten) above the tallest bar
  const step = niceStep((Math.max(...totals, 0) || 1) / 4);
  const max = step * 4;
  const bw = (W - L - R) / Math.max(days.length, 1);
  const svg = h('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': id + '-t', id });
  svg.appendChild(h('title', { id: id + '-t' }, title));
  for (let i = 0; i <= 4; i++) {
    const y = T + ((H - T - B) * i) / 4;
    svg.appendChild(h('line', { x1: L, x2: W - R, y1: y, y2: y, class: 'gridline' }));
    svg.appendChild(h('text', { x: L - 6, y: y + 3, 'text-anchor': 'end', class: 'axis' }, tick(step * (4 - i), step)));
  }
  days.forEach((d, i) => {
    let y = H - B;
    keys.forEach((k, ki) => {
      const v = series[k][d] || 0;
      if (v <= 0) return;
      const hh = ((H - T - B) * v) / max;
      y -= hh;
      svg.appendChild(h('rect', { x: (L + i * bw + 1).toFixed(1), y: y.toFixed(1), width: Math.max(bw - 2, 1).toFixed(1),
        height: Math.max(hh, 0.5).toFixed(1), class: 'c' + (ki % 8) }, h('title', {}, `${d} ${k}: ${fmt(v, 3)} ${unit}`)));
    });
    if (days.length <= 31 && (i % Math.ceil(days.length / 10) === 0))
      svg.appendChild(h('text', { x: L + i * bw + bw / 2, y: H - B + 14, 'text-anchor': 'middle', class: 'axis' }, d.slice(8, 10)));
  });
  const legend = h('ul', { class: 'legend' }, keys.map((k, ki) =>
    h('li', {}, h('span', { class: 'swatch c' + (ki % 8), 'aria-hidden': 'true' }), k + ': ' + fmt(keys.length ? days.reduce((s, d) => s + (series[k][d] || 0), 0) : 0, 3) + ' ' + unit)));
  return h('figure', { class: 'chart' }, h('figcaption', {}, h('strong', {}, title)), svg,
           keys.length ? legend : h('p', { class: 'hint' }, 'No usage yet this month.'));
}

async function viewUsage(body) {
  const month = new Date().toISOString().slice(0, 7);
  const q = (by) => '/api/v1/usage?tenant=' + enc(S.tenant) + (S.project ? '&project=' + enc(S.project) : '') +
                    '&month=' + month + '&group_by=' + by + '&bucket=day';
  const [byProject, byModel, byVendor] = await Promise.all([api('GET', q('project')), api('GET', q('model')),
    api('GET', q('vendor,accelerator'))]);
  const first = new Date(month + '-01T00:00:00Z');
  const days = [];
  for (let d = new Date(first); d.getUTCMonth() === first.getUTCMonth(); d.setUTCDate(d.getUTCDate() + 1))
    days.push(d.toISOString().slice(0, 10));
  const collect = (rep, key, val) => {
    const s = {};
    for (const r of rep.rows) {
      const v = val(r);
      if (!v) continue;
      const k = r[key] || (key === 'model' ? '(no model: jobs)' : '(none)');
      const d = String(r.bucket || '').slice(0, 10);
      (s[k] = s[k] || {})[d] = (s[k][d] || 0) + v;
    }
    return s;
  };
  const t = byProject.totals || {};
  body.appendChild(h('div', { class: 'grid', id: 'usage-totals' },
    [['Card-hours', fmt(t.card_hours, 3)], ['Tokens', fmt((t.prompt_tokens || 0) + (t.completion_tokens || 0))],
     ['Requests', fmt(t.requests)], ['Cost', money(t.cost, byProject.currency)]].map(([l, v]) =>
      h('div', { class: 'card' }, h('div', { class: 'stat-label' }, l + ' in ' + month), h('div', { class: 'stat' }, v)))));
  body.appendChild(h('div', { class: 'charts', id: 'usage-charts' },
    barChart('chart-ch-project', 'Daily card-hours by project', 'card-hours', days, collect(byProject, 'project', (r) => r.card_hours)),
    barChart('chart-tok-project', 'Daily tokens by project', 'tokens', days, collect(byProject, 'project', (r) => (r.prompt_tokens || 0) + (r.completion_tokens || 0))),
    barChart('chart-ch-model', 'Daily card-hours by model', 'card-hours', days, collect(byModel, 'model', (r) => r.card_hours)),
    barChart('chart-tok-model', 'Daily tokens by model', 'tokens', days, collect(byModel, 'model', (r) => (r.prompt_tokens || 0) + (r.completion_tokens || 0)))));
  const per = {};
  for (const r of byProject.rows) {
    const k = r.project || '(none)';
    const p = (per[k] = per[k] || { project: k, card_hours: 0, tokens: 0, cost: 0 });
    p.card_hours += r.card_hours || 0; p.tokens += (r.prompt_tokens || 0) + (r.completion_tokens || 0); p.cost += r.cost || 0;
  }
  const perV = {};
  for (const r of byVendor.rows) {
    if (!r.card_hours) continue; // tokens served off the inventory have no card
    const k = r.vendor + '\u0000' + r.accelerator + '\u0000' + r.form;
    const p = (perV[k] = perV[k] || { vendor: r.vendor, accelerator: r.accelerator, form: r.form, card_hours: 0, cost: 0,
                                      cpu_hours: 0, cpu_cost: 0, memory_gib_hours: 0, memory_cost: 0 });
    p.card_hours += r.card_hours || 0; p.cost += r.card_hour_cost || 0;
    p.cpu_hours += r.cpu_hours || 0; p.cpu_cost += r.cpu_cost || 0;
    p.memory_gib_hours += r.memory_gib_hours || 0; p.memory_cost += r.memory_cost || 0;
  }
  const cur = byVendor.currency || S.currency ? ' (' + (byVendor.currency || S.currency) + ')' : '';
  // the jobs' CPUs and memory beside their cards, with the rate card's prices for them
  // (docs/metering.md, "Rate cards"): shown once the month has any
  const vt = byVendor.totals || {};
  const cpuMem = (vt.cpu_hours || 0) > 0 || (vt.memory_gib_hours || 0) > 0 ? [
    { label: 'CPU-hours', num: true, get: (r) => fmt(r.cpu_hours, 3) },
    { label: 'CPU cost' + cur, num: true, get: (r) => fmt(r.cpu_cost, 2) },
    { label: 'Memory GiB-hours', num: true, get: (r) => fmt(r.memory_gib_hours, 3) },
    { label: 'Memory cost' + cur, num: true, get: (r) => fmt(r.memory_cost, 2) }] : [];
  body.appendChild(h('h3', {}, 'By vendor and accelerator (table)'));
  body.appendChild(h('div', { id: 'usage-vendors' }, table(null, [{ label: 'Vendor', get: (r) => r.vendor, cls: () => 'vendor' },
    { label: 'Accelerator', get: (r) => r.accelerator }, { label: 'Form', get: (r) => r.form },
    { label: 'Card-hours', num: true, get: (r) => fmt(r.card_hours, 3) },
    { label: 'Cost' + cur, num: true, get: (r) => fmt(r.cost, 2) }, ...cpuMem], Object.values(perV))));
  body.appendChild(h('h3', {}, 'By project (table)'));
  body.appendChild(table(null, [{ label: 'Project', get: (r) => r.project },
    { label: 'Card-hours', num: true, get: (r) => fmt(r.card_hours, 3) }, { label: 'Tokens', num: true, get: (r) => r.tokens },
    { label: 'Cost' + (byProject.currency || S.currency ? ' (' + (byProject.currency || S.currency) + ')' : ''), num: true,
      get: (r) => fmt(r.cost, 2) }], Object.values(per)));
}

// ---------------------------------------------------------------- keys and KBs

async function viewKeys(body) {
  if (!S.project) { body.appendChild(h('p', {}, 'Pick a project above to see its API keys.')); return; }
  const list = h('div', { id: 'keys-list' }), secret = h('div', { id: 'key-secret', role: 'status', 'aria-live': 'polite' });
  const refresh = async () => {
    const ks = (await api('GET', ppath() + '/keys')).items;
    clear(list).appendChild(table('API keys of ' + S.project, [
      { label: 'Name', get: (k) => k.name }, { label: 'Id', get: (k) => k.id }, { label: 'Owner', get: (k) => k.owner },
      { label: 'Models', get: (k) => (k.models && k.models.length ? k.models.join(', ') : 'any') },
      { label: 'Created', get: (k) => when(k.created_at) }, { label: 'Revoked', get: (k) => (k.revoked_at ? when(k.revoked_at) : '—') }], ks));
  };
  const form = h('form', { id: 'key-form', class: 'card inline', 'aria-labelledby': 'key-form-h' }, h('h3', { id: 'key-form-h' }, 'Create a key'),
    field('key-name', 'Name', h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9\\-]*' })),
    h('p', {}, h('button', { type: 'submit' }, 'Create')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const k = await api('POST', ppath() + '/keys', { name: new FormData(form).get('name') });
      clear(secret).appendChild(h('div', { class: 'card' }, h('p', {}, 'Key ', h('strong', {}, k.name || ''), ' created. Copy the secret now: it is shown only once.'),
        h('p', { class: 'secret' }, k.key)));
      form.reset();
      await refresh();
    } catch (e) { clear(secret).appendChild(h('p', { class: 'status error' }, 'Not created: ' + e.message)); }
  });
  body.append(form, secret, list);
  await refresh();
}

async function viewKbs(body) {
  let kbs;
  try { kbs = (await api('GET', tpath() + '/kbs')).items; } catch (e) {
    if (e.status === 404 || e.status === 403) { body.appendChild(h('p', {}, 'No knowledge bases you can read here.')); return; }
    throw e;
  }
  body.appendChild(table('Knowledge bases', [{ label: 'Name', get: (k) => k.name },
    { label: 'Project', get: (k) => k.project || '(tenant-wide)' }, { label: 'Description', get: (k) => k.description || '' },
    { label: 'Documents', num: true, get: (k) => (k.documents === undefined ? '—' : k.documents) }], kbs));
}

// ---------------------------------------------------------------- platform and ops

async function viewTenants(body) {
  const ts = (await api('GET', '/api/v1/tenants')).items;
  body.appendChild(table('Tenants', [{ label: 'Name', get: (t) => t.name }, { label: 'Display name', get: (t) => t.display_name || '' },
    { label: 'Created', get: (t) => when(t.created_at) },
    { label: 'Open', get: (t) => h('button', { type: 'button', class: 'secondary', 'aria-label': 'Open tenant ' + t.name,
      on: { click: async () => { S.tenant = t.name; await loadProjects(''); fillPickers(); go('overview'); } } }, 'Overview') }], ts));
}

async function viewCluster(body) {
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const [nodes, gpus, binds] = await Promise.all([api('GET', '/api/v1/nodes'), api('GET', '/api/v1/gpus'),
    api('GET', '/api/v1/bindings?at=' + enc(at)).catch(() => ({ items: [] }))]);
  const held = {};
  for (const b of binds.items) (held[b.gpu] = held[b.gpu] || []).push(b);
  const byNode = {};
  for (const g of gpus.items) (byNode[g.node] = byNode[g.node] || []).push(g);
  const counts = { healthy: 0, degraded: 0, failed: 0 };
  const vendorOf = (g) => g.vendor || 'nvidia'; // cards recorded before vendors were are NVIDIA's
  const byVendor = {};
  gpus.items.forEach((g) => {
    counts[g.health] = (counts[g.health] || 0) + 1;
    byVendor[vendorOf(g)] = (byVendor[vendorOf(g)] || 0) + 1;
  });
  const vendorText = Object.keys(byVendor).sort().map((v) => `${byVendor[v]} ${v}`).join(', ');
  body.appendChild(h('p', { id: 'cluster-summary' }, `${nodes.items.length} nodes, ${gpus.items.length} GPUs (${vendorText || 'none'}): ${counts.healthy} healthy, ${counts.degraded} degraded, ${counts.failed} failed; ${Object.keys(held).length} held now.`));
  const map = h('div', { id: 'cluster-map' });
  for (const n of nodes.items) {
    const cells = (byNode[n.name] || []).sort((a, b) => a.index - b.index).map((g) => {
      const hs = held[g.uuid] || [];
      const tenants = [...new Set(hs.map((b) => b.tenant + '/' + b.project))];
      const label = `GPU ${g.index} ${vendorOf(g)} ${g.model}, ${g.mode}, ${g.health}` + (tenants.length ? ', held by ' + tenants.join(', ') : ', free');
      return h('li', { class: 'gpu health-' + g.health + (hs.length ? ' held' : ''), tabindex: '0', 'aria-label': label, title: g.uuid,
                       'data-vendor': vendorOf(g) },
        h('div', { class: 't' }, '#' + g.index + ' ' + g.model),
        h('div', { class: 'vendor' }, 'vendor: ' + vendorOf(g)),
        h('div', {}, 'form: ' + g.mode + (g.slices && g.slices.length ? ' (' + g.slices.length + ' slices)' : '')),
        h('div', { class: 'health-' + g.health }, g.health + (g.admin_state && g.admin_state !== 'none' ? ' · ' + g.admin_state : '')),
        h('div', {}, tenants.length ? tenants.join(', ') : 'free'));
    });
    const nv = [...new Set((byNode[n.name] || []).map(vendorOf))].sort();
    map.appendChild(h('section', { class: 'node card', 'aria-label': 'Node ' + n.name, 'data-vendors': nv.join(',') },
      h('h3', {}, n.name + ' — ' + n.state + (n.admin_state !== 'none' ? ' (' + n.admin_state + ')' : '') + (n.pool ? ' · pool ' + n.pool : '') +
        (nv.length ? ' · ' + nv.join(', ') : '')),
      nodeWindows(n),
      h('ul', { class: 'gpus', role: 'list' }, cells)));
  }
  if (!nodes.items.length) map.appendChild(h('p', {}, 'No nodes have joined yet.'));
  body.appendChild(map);
}

// A node's next maintenance window and next tenant's reservation (GET /api/v1/nodes), or nothing.
function nodeWindows(n) {
  const m = n.next_maintenance, r = n.next_reservation;
  if (!m && !r) return null;
  return h('p', { class: 'windows' },
    m ? 'Maintenance ' + m.reservation + ' (' + m.state + '): ' + when(m.start) + ' → ' + when(m.end) : null,
    m && r ? ' · ' : null,
    r ? 'Reserved' + (r.reservation ? ' (' + r.reservation + ', ' + r.tenant + ')' : '') + ' (' + r.state + '): ' + when(r.start) + ' → ' + when(r.end) : null);
}

async function viewHealth(body) {
  const [nodes, gpus] = await Promise.all([api('GET', '/api/v1/nodes'), api('GET', '/api/v1/gpus')]);
  body.appendChild(table('Nodes', [{ label: 'Node', get: (n) => n.name }, { label: 'State', get: (n) => n.state },
    { label: 'Admin', get: (n) => n.admin_state }, { label: 'GPUs', num: true, get: (n) => n.gpu_count },
    { label: 'Next maintenance', get: (n) => (n.next_maintenance ? n.next_maintenance.reservation + ' ' + when(n.next_maintenance.start) : '—') },
    { label: 'Last heartbeat', get: (n) => when(n.last_heartbeat) }], nodes.items));
  body.appendChild(h('h3', {}, 'GPUs not healthy'));
  body.appendChild(table(null, [{ label: 'GPU', get: (g) => g.uuid }, { label: 'Vendor', get: (g) => g.vendor || 'nvidia' },
    { label: 'Model', get: (g) => g.model }, { label: 'Node', get: (g) => g.node },
    { label: 'Health', get: (g) => g.health, cls: (g) => 'health-' + g.health }, { label: 'Cause', get: (g) => g.health_cause || '' }],
  gpus.items.filter((g) => g.health !== 'healthy')));
}

function alarmTable(items, ack) {
  return table(null, [{ label: 'When', get: (a) => when(a.at) }, { label: 'Severity', get: (a) => a.severity },
    { label: 'Kind', get: (a) => a.kind }, { label: 'Node', get: (a) => a.node }, { label: 'GPU', get: (a) => a.gpu || '' },
    { label: 'Message', get: (a) => a.message },
    { label: 'State', get: (a) => (a.state === 'resolved' ? 'resolved ' + when(a.resolved_at) + ': ' + a.resolution : a.state || 'open') },
    { label: 'Acknowledged', get: (a) => (a.acked_at ? 'by ' + a.acked_by : a.state === 'resolved' ? '' : ack && S.global.has('ops-engineer')
      ? h('button', { type: 'button', class: 'secondary', on: { click: async () => {
        try { await api('POST', '/api/v1/alarms/' + enc(a.id) + '/ack', {}); rerender(); } catch (e) { say(e.message, true); } } } }, 'Acknowledge')
      : 'no') }], items);
}

async function viewAlarms(body) {
  body.appendChild(alarmTable((await api('GET', '/api/v1/alarms')).items, true));
}

async function viewWorkOrders(body) {
  const wos = (await api('GET', '/api/v1/work-orders')).items;
  body.appendChild(table('Work orders', [{ label: 'Id', get: (w) => w.id }, { label: 'Node', get: (w) => w.node },
    { label: 'GPU', get: (w) => w.gpu || '' }, { label: 'Title', get: (w) => w.title }, { label: 'State', get: (w) => w.state },
    { label: 'Assignee', get: (w) => w.assignee || '' }, { label: 'Updated', get: (w) => when(w.updated_at) }], wos));
}

// ---------------------------------------------------------------- start

// The sign-in section as the page first had it (kept at start, cloned on sign-out).
let signInNode = null;
function renderSignIn() {
  clear($('view')).appendChild(signInNode.cloneNode(true));
  wireSignIn();
}

function wireSignIn() {
  const lf = $('login-form'), tf = $('token-form');
  if (!lf || !tf) return;
  lf.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = new FormData(lf);
    try {
      const r = await api('POST', '/api/v1/login', { name: f.get('name'), password: f.get('password') });
      await signIn(r.token);
    } catch (e) { say(e.status === 401 ? 'Wrong name or password.' : e.message, true); }
  });
  tf.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await signIn(String(new FormData(tf).get('token') || '').trim());
  });
  $('login-name').focus();
}

document.addEventListener('DOMContentLoaded', () => {
  signInNode = $('signin').cloneNode(true);
  wireSignIn();
  $('sign-out').addEventListener('click', () => signOut());
  $('pick-tenant').addEventListener('change', async (ev) => {
    S.tenant = ev.target.value;
    await loadProjects('');
    fillPickers();
    rerender();
  });
  $('pick-project').addEventListener('change', (ev) => {
    S.project = ev.target.value;
    fillPickers();
    rerender();
  });
  window.addEventListener('hashchange', () => { if (S.me) go(location.hash.slice(1)); });
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (tok) signIn(tok);
});
