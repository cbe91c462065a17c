// The console: routes (#/fleet, #/node/NAME, #/queue, #/job/ID, #/usage, #/reservations), the data they
// show, and live updates. Data comes from the REST API only; the event stream
// says which kinds changed (jobs, nodes, card readings) and only those are fetched
// again.
import * as api from './api.js';
import { clear } from './dom.js';
import { fleetView, nodeView, queueView, jobView } from './views.js';
import { usageView } from './usage.js';
import { reservationsView } from './reservations.js';

const VIEWS = { fleet: fleetView, node: nodeView, queue: queueView, job: jobView, usage: usageView, reservations: reservationsView };

// What the views read. `need` says which resources the current view shows.
const data = {
  whoami: null, inventory: null, nodes: null, jobs: null, node: null, job: null, events: null, usage: null, reservations: null, error: null,
  usageQuery: { by: 'project', days: 30 }, // What the usage view asks for; it sets this.
};
let current = null; // { name, param, view }
let counters = null;
let lastMetricsFetch = 0;

function route() {
  const [, name = 'fleet', ...rest] = (location.hash || '#/fleet').split('/');
  return { name: VIEWS[name] ? name : 'fleet', param: decodeURIComponent(rest.join('/')) };
}

// Which API resources a route needs, by change kind.
function resources(r) {
  switch (r.name) {
    case 'fleet': return { jobs: ['jobs'], nodes: ['inventory', 'nodes'] };
    case 'node': return { jobs: ['jobs'], nodes: ['node'], metrics: ['node'] };
    case 'queue': return { jobs: ['jobs'], nodes: [] };
    case 'job': return { jobs: ['job', 'events'], nodes: [] };
    case 'usage': return { jobs: ['usage'], nodes: [] };
    case 'reservations': return { jobs: [], nodes: ['reservations'] };
    default: return {};
  }
}

const FETCH = {
  inventory: () => api.get('/v1/inventory'),
  nodes: async () => (await api.get('/v1/nodes')).nodes,
  jobs: async () => (await api.get('/v1/jobs?limit=1000')).jobs,
  node: () => api.get(`/v1/nodes/${encodeURIComponent(current.param)}`),
  // An array's parent comes with those of its elements a listing holds (at most
  // 1000): the jobs listed before the next job id are its elements, highest index first.
  job: async () => {
    const j = await api.get(`/v1/jobs/${encodeURIComponent(current.param)}`);
    if (j.array) {
      const next = `j-${String(Number(j.id.slice(2)) + 1).padStart(8, '0')}`;
      const page = await api.get(`/v1/jobs?after=${next}&limit=${Math.min(j.array.count, 1000)}`);
      j.elements = page.jobs.filter((e) => e.array_id === j.id);
    }
    return j;
  },
  // The stored state history; null from a scheduler that has none (an older one).
  events: async () => {
    try {
      return await api.get(`/v1/jobs/${encodeURIComponent(current.param)}/events`);
    } catch (e) {
      if (e instanceof api.ApiError && e.status === 404) return null;
      throw e;
    }
  },
  reservations: async () => (await api.get('/v1/reservations')).reservations,
  usage: () => {
    const q = data.usageQuery;
    const since = new Date(Date.now() - q.days * 86400e3).toISOString();
    return api.get(`/v1/usage?by=${q.by}&since=${encodeURIComponent(since)}`);
  },
};

let inFlight = null;
let again = new Set();

// Fetches `names` (coalescing: a refresh asked for while one runs follows it), then redraws.
async function refresh(names) {
  for (const n of names) again.add(n);
  if (inFlight) return inFlight;
  inFlight = (async () => {
    while (again.size) {
      const batch = [...again];
      again = new Set();
      const for_ = current;
      try {
        const values = await Promise.all(batch.map((n) => FETCH[n]()));
        if (for_ !== current) continue;
        batch.forEach((n, i) => { data[n] = values[i]; });
        data.error = null;
      } catch (e) {
        if (e instanceof api.ApiError && e.status === 401) return refused(e.message);
        data.error = e.message;
      }
      if (for_ === current) current.view.update(data);
    }
  })();
  try {
    await inFlight;
  } finally {
    inFlight = null;
  }
}

function show() {
  if (current && current.view.unmount) current.view.unmount();
  const r = route();
  document.querySelectorAll('[data-nav]').forEach((a) => a.classList.toggle('on', a.dataset.nav === r.name));
  const root = clear(document.getElementById('view'));
  current = { ...r, view: VIEWS[r.name](root, r.param, { data, refresh: (n) => refresh(n), api }) };
  document.body.dataset.view = r.name;
  const res = resources(r);
  refresh([...new Set([...(res.jobs || []), ...(res.nodes || [])])]);
}

function onChange(c) {
  const prev = counters;
  counters = c;
  if (!prev || !current) return;
  const res = resources(current);
  const names = new Set();
  if (c.jobs !== prev.jobs) (res.jobs || []).forEach((n) => names.add(n));
  if (c.nodes !== prev.nodes) (res.nodes || []).forEach((n) => names.add(n));
  // Card readings change with every heartbeat: at most every 2 s.
  if (c.metrics !== prev.metrics && res.metrics && Date.now() - lastMetricsFetch > 2000) {
    lastMetricsFetch = Date.now();
    res.metrics.forEach((n) => names.add(n));
  }
  if (names.size) refresh([...names]);
}

function setLive(on) {
  const e = document.getElementById('live');
  e.dataset.live = on ? 'on' : 'off';
  e.textContent = on ? '● live' : '○ reconnecting';
}

let stopEvents = null;

function refused(message) {
  if (stopEvents) stopEvents();
  stopEvents = null;
  document.body.dataset.auth = 'refused';
  document.getElementById('logout').hidden = true;
  document.getElementById('who').textContent = '';
  document.getElementById('login').hidden = false;
  document.getElementById('view').hidden = true;
  document.getElementById('login-message').textContent = api.token()
    ? `Token refused by the scheduler: ${message}`
    : 'Token refused: the scheduler asks for a token.';
}

async function start() {
  let who;
  try {
    who = await api.get('/v1/whoami');
  } catch (e) {
    if (e instanceof api.ApiError && (e.status === 401 || e.status === 403)) return refused(e.message);
    document.getElementById('view').textContent = `The scheduler did not answer: ${e.message}`;
    return;
  }
  data.whoami = who;
  document.body.dataset.auth = 'ok';
  document.body.dataset.role = who.role;
  document.getElementById('login').hidden = true;
  document.getElementById('view').hidden = false;
  document.getElementById('who').textContent = who.auth ? `${who.name} (${who.role})` : 'no authentication';
  document.getElementById('logout').hidden = !who.auth;
  stopEvents = api.followEvents(onChange, (live, err) => {
    setLive(live);
    if (err) refused(err.message);
  });
  window.addEventListener('hashchange', show);
  show();
}

document.getElementById('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  api.setToken(document.getElementById('token').value.trim());
  document.getElementById('token').value = '';
  window.removeEventListener('hashchange', show);
  start();
});
document.getElementById('logout').addEventListener('click', () => {
  api.setToken('');
  refused('');
});

start();
