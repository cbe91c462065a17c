// The four views. Each is mounted once per route into `root` and then updated
// with fresh data (update(data)) as often as the API's answers change; what the
// user types or picks (filters, log rank) lives outside what update() redraws.
import { board, shortJob } from './board.js';
import { h, s, append, clear, ago, when, stateBadge, jobColour, TERMINAL } from './dom.js';

export const JOB_STATES = ['pending', 'assigned', 'running', 'succeeded', 'failed', 'cancelled'];
const NODE_STATES = ['ready', 'degraded', 'draining', 'down'];

function errorLine(data) {
  return data.error ? h('p', { class: 'error', role: 'alert' }, `⚠ ${data.error}`) : '';
}

function nodeModel(n) {
  const d = ((n.inventory && n.inventory.devices) || [])[0];
  return d ? d.model : '-';
}

function legend() {
  return h('p', { class: 'legend' },
    h('span', { class: 'mod-l free' }, '○ free'), h('span', { class: 'mod-l busy' }, 'busy (job no.)'),
    h('span', { class: 'mod-l unhealthy' }, '✕ unhealthy'), h('span', { class: 'mod-l absent' }, '∅ absent'),
    h('span', { class: 'group-l' }, 'free valid group'));
}

function jobLink(j) {
  return h('a', { href: `#/job/${encodeURIComponent(j.id)}`, class: `joblink jc${jobColour(j.id)}` }, j.id);
}

function cards(j) {
  return `${j.spec.nodes}×${j.spec.devices}`;
}

// A node's labels as "rack=r7,fabric=ib" (what jobs' node_selector matches); '' for none.
function labelText(n) {
  return Object.entries(n.labels || {}).map(([k, v]) => `${k}=${v}`).join(',');
}

// --- fleet ---
export function fleetView(root) {
  const filters = { model: '', state: '', text: '' };
  const summary = h('div', { class: 'summary' });
  let grid = h('div', { class: 'grid', id: 'node-grid' });
  const model = h('select', { id: 'filter-model', 'aria-label': 'model' });
  const state = h('select', { id: 'filter-state', 'aria-label': 'node state' },
    h('option', { value: '' }, 'any state'), NODE_STATES.map((st) => h('option', { value: st }, st)));
  const text = h('input', { id: 'filter-text', type: 'search', placeholder: 'node name or label (rack=r7)', 'aria-label': 'node name or label' });
  let last = null;
  const redraw = () => last && drawGrid(last);
  model.addEventListener('change', () => { filters.model = model.value; redraw(); });
  state.addEventListener('change', () => { filters.state = state.value; redraw(); });
  text.addEventListener('input', () => { filters.text = text.value.trim(); redraw(); });
  append(root, [h('h1', {}, 'Fleet'), summary,
    h('div', { class: 'filters' }, h('span', {}, 'Nodes'), model, state, text), legend(), grid]);

  // The first screenful of boards is drawn at once, the rest a chunk per frame, so a
  // fleet of thousands paints its first boards without waiting for the last.
  let drawing = 0;
  function drawGrid(data) {
    const nodes = (data.nodes || []).filter((n) =>
      (!filters.model || nodeModel(n) === filters.model) && (!filters.state || n.state === filters.state) &&
      (!filters.text || n.name.includes(filters.text) || labelText(n).includes(filters.text)));
    const gen = ++drawing;
    const fresh = h('div', { class: 'grid', id: 'node-grid', 'data-count': nodes.length });
    const drawFrom = (from, count) => {
      const frag = document.createDocumentFragment();
      for (const n of nodes.slice(from, from + count)) {
        frag.append(h('a', { class: `node st-${n.state}`, href: `#/node/${encodeURIComponent(n.name)}`, 'data-node': n.name },
          h('div', { class: 'node-head' }, h('span', { class: 'name' }, n.name),
            h('span', { class: `nstate ns-${n.state}` }, n.state)),
          board(n, { compact: true })));
      }
      fresh.append(frag);
      if (from + count < nodes.length) {
        requestAnimationFrame(() => { if (gen === drawing) drawFrom(from + count, 250); });
      } else {
        fresh.dataset.complete = 'true';
      }
    };
    drawFrom(0, 120);
    if (!nodes.length) {
      fresh.append(h('p', { class: 'empty' }, data.nodes ? 'No node matches.' : 'Loading…'));
      fresh.dataset.complete = 'true';
    }
    grid.replaceWith(fresh);
    grid = fresh;
  }

  return {
    update(data) {
      last = data;
      const models = [...new Set((data.nodes || []).map(nodeModel))].sort();
      if (model.options.length !== models.length + 1) {
        clear(model).append(h('option', { value: '' }, 'any model'), ...models.map((m) => h('option', { value: m }, m)));
        model.value = filters.model;
      }
      clear(summary);
      for (const m of (data.inventory && data.inventory.models) || []) {
        const fg = m.free_groups || {};
        summary.append(h('div', { class: 'stat', 'data-model': m.model },
          h('h2', {}, `${m.model} `, h('small', {}, m.vendor)),
          h('dl', {}, h('dt', {}, 'cards'), h('dd', { 'data-k': 'cards' }, m.cards),
            h('dt', {}, 'free'), h('dd', { 'data-k': 'free' }, m.free),
            h('dt', {}, 'unhealthy'), h('dd', { 'data-k': 'unhealthy', class: m.cards - m.healthy ? 'warn' : '' },
              m.cards - m.healthy)),
          h('p', { class: 'groups' }, `free groups: 8×${fg['8'] || 0} · 4×${fg['4'] || 0} · 2×${fg['2'] || 0}`)));
      }
      const byState = {};
      for (const j of data.jobs || []) byState[j.state] = (byState[j.state] || 0) + 1;
      summary.append(h('div', { class: 'stat jobs-by-state' }, h('h2', {}, h('a', { href: '#/queue' }, 'Jobs')),
        h('dl', {}, JOB_STATES.flatMap((st) => [h('dt', {}, stateBadge(st)), h('dd', { 'data-jobs': st }, byState[st] || 0)])),
        (data.jobs || []).length >= 1000 ? h('p', { class: 'hint' }, 'Among the latest 1000 jobs.') : ''));
      const ns = (data.inventory && data.inventory.nodes) || {};
      summary.append(h('div', { class: 'stat' }, h('h2', {}, 'Nodes'),
        h('dl', {}, NODE_STATES.flatMap((st) => [h('dt', {}, st), h('dd', { 'data-nodes': st }, ns[st] || 0)]))));
      const err = errorLine(data);
      if (err) summary.append(err);
      drawGrid(data);
    },
  };
}

// --- node ---
// Card readings come with each heartbeat. The charts start from the scheduler's
// last hour (GET /v1/nodes/{name}/history, one sample per 30 s) and add what this
// page sees while it stays open.
const HISTORY_MS = 3600 * 1000;
const history = new Map(); // "node/module" -> [[t, util, mem%, temp, power]]

async function loadHistory(api, name) {
  const body = await api.get(`/v1/nodes/${encodeURIComponent(name)}/history`);
  for (const c of body.cards || []) {
    const key = `${name}/${c.module_id}`;
    const seen = history.get(key) || [];
    const first = seen.length ? seen[0][0] : Infinity;
    const older = (c.samples || []).map((x) => [Date.parse(x[0]), x[1], x[2], x[3], x[4]]).filter((x) => x[0] < first);
    history.set(key, older.concat(seen));
  }
}

function remember(node) {
  const t = Date.parse(node.last_heartbeat) || Date.now();
  for (const d of node.inventory.devices || []) {
    const key = `${node.name}/${d.module_id}`;
    const list = history.get(key) || [];
    if (!list.length || list[list.length - 1][0] !== t) {
      const mem = d.memory_total_mib ? (100 * (d.memory_used_mib || 0)) / d.memory_total_mib : null;
      list.push([t, d.utilization_pct ?? null, mem, d.temperature_c ?? null, d.power_w ?? null]);
    }
    while (list.length && list[0][0] < t - HISTORY_MS) list.shift();
    history.set(key, list);
  }
}

function spark(points, col, max) {
  const w = 90;
  const ht = 22;
  const vals = points.filter((p) => p[col] !== null);
  if (vals.length < 2) return null;
  const t0 = vals[0][0];
  const span = Math.max(vals[vals.length - 1][0] - t0, 1);
  const top = Math.max(max, ...vals.map((p) => p[col]));
  const d = vals.map((p, i) => `${i ? 'L' : 'M'}${((p[0] - t0) / span * w).toFixed(1)},${(ht - (p[col] / top) * ht).toFixed(1)}`).join('');
  return s('svg', { class: 'spark', viewBox: `0 0 ${w} ${ht}`, width: w, height: ht, role: 'img', 'aria-label': 'history' },
    s('path', { d }));
}

function metric(value, unit, points, col, max) {
  return h('td', { class: 'metric' }, h('span', {}, value === null || value === undefined ? '-' : `${value}${unit}`),
    spark(points, col, max));
}

export function nodeView(root, name, ctx) {
  const head = h('div', { class: 'node-title' });
  const body = h('div');
  // The buttons outlive redraws (readings arrive every few seconds), so no click is lost.
  const actions = h('div', { class: 'actions' });
  const drain = h('button', { id: 'drain', type: 'button', hidden: true, onclick: () => act('drain') }, 'Drain');
  const undrain = h('button', { id: 'undrain', type: 'button', hidden: true, onclick: () => act('undrain') }, 'Undrain');
  append(root, [h('p', { class: 'crumbs' }, h('a', { href: '#/fleet' }, 'Fleet'), ' › ', name), head, actions, body]);
  // The charts work without it (an older scheduler, a follower): they then start empty.
  loadHistory(ctx.api, name).then(() => ctx.refresh(['node']), () => {});
  const act = async (what) => {
    try {
      await ctx.api.post(`/v1/nodes/${encodeURIComponent(name)}/${what}`);
      ctx.refresh(['node']);
    } catch (e) {
      ctx.data.error = e.message;
      ctx.refresh(['node']);
    }
  };
  return {
    update(data) {
      const n = data.node;
      clear(head);
      clear(body);
      if (!n || n.name !== name) {
        body.append(errorLine(data) || h('p', {}, 'Loading…'));
        return;
      }
      remember(n);
      const admin = data.whoami && data.whoami.role === 'admin';
      head.append(h('h1', {}, n.name, ' ', h('span', { class: `nstate ns-${n.state}`, 'data-node-state': n.state }, n.state)),
        h('p', { class: 'meta' }, `${n.address}:${n.agent_port} · last heartbeat ${ago(n.last_heartbeat)}`,
          n.degraded ? h('span', { class: 'warn' }, ` · degraded: ${n.degraded}`) : null,
          labelText(n) ? h('span', { 'data-labels': labelText(n) }, ` · labels ${labelText(n)}`) : null),
        (n.reservations || []).length ? h('p', { class: 'meta', 'data-reservations': n.reservations.map((r) => r.name).join(',') },
          'Reserved: ', n.reservations.map((r) => `${r.name}${r.maintenance ? ' (maintenance)' : ''} ${when(r.start)} – ${when(r.end)}`).join('; ')) : null,
        errorLine(data));
      if (admin && !actions.firstChild) actions.append(drain, undrain);
      drain.hidden = n.state === 'draining';
      undrain.hidden = n.state !== 'draining';
      body.append(board(n), legend());
      const rows = (n.inventory.devices || []).slice().sort((a, b) => a.module_id - b.module_id).map((d) => {
        const pts = history.get(`${n.name}/${d.module_id}`) || [];
        const mem = d.memory_total_mib ? `${d.memory_used_mib ?? '-'} / ${d.memory_total_mib} MiB` : null;
        return h('tr', { 'data-module': d.module_id },
          h('td', {}, d.module_id), h('td', {}, d.index), h('td', {}, d.model),
          h('td', {}, d.healthy === false ? h('span', { class: 'warn' }, `✕ ${d.health_reason || 'unhealthy'}`) : '✓'),
          metric(d.utilization_pct, ' %', pts, 1, 100), h('td', { class: 'metric' }, h('span', {}, mem || '-'), spark(pts, 2, 100)),
          metric(d.temperature_c, ' °C', pts, 3, 40), metric(d.power_w, ' W', pts, 4, 100),
          h('td', {}, d.job ? jobLink({ id: d.job }) : '-'));
      });
      body.append(h('h2', {}, 'Cards'),
        h('div', { class: 'scroll' }, h('table', { class: 'cards' },
          h('thead', {}, h('tr', {}, ['module', 'index', 'model', 'health', 'utilisation', 'memory', 'temperature', 'power', 'job'].map((c) => h('th', {}, c)))),
          h('tbody', {}, rows))),
        h('p', { class: 'hint' }, 'Readings are the latest heartbeat\'s; the charts show the last hour (the scheduler keeps one sample per 30 s, in memory).'));
      const jobs = (data.jobs || []).filter((j) => !TERMINAL.has(j.state) && (j.allocations || []).some((a) => a.node === n.name));
      body.append(h('h2', {}, 'Jobs on this node'), jobTable(jobs, (j) => (j.allocations || []).filter((a) => a.node === n.name).map((a) => `[${a.module_ids.join(',')}]`).join(' ')));
    },
  };
}

// Array elements are shown as one row per array (in the place of its first element
// here), linking to the array's own view; `extra` adds a column of its own.
function groupArrays(jobs) {
  const out = [];
  const groups = new Map();
  for (const j of jobs) {
    if (!j.array_id) { out.push(j); continue; }
    let g = groups.get(j.array_id);
    if (!g) {
      g = { group: j.array_id, jobs: [] };
      groups.set(j.array_id, g);
      out.push(g);
    }
    g.jobs.push(j);
  }
  return out;
}

function stateCounts(states) {
  return JOB_STATES.filter((st) => states[st]).map((st) => h('span', { class: 'count', 'data-count-state': st },
    stateBadge(st), ` ${states[st]}`));
}

function arrayRow(g, i, extra) {
  const first = g.jobs[0];
  const states = {};
  for (const j of g.jobs) states[j.state] = (states[j.state] || 0) + 1;
  return h('tr', { 'data-array': g.group },
    h('td', {}, first.queue_position ?? i + 1),
    h('td', {}, h('a', { href: `#/job/${encodeURIComponent(g.group)}`, class: `joblink jc${jobColour(g.group)}` }, g.group),
      h('span', { class: 'hint' }, ` [${g.jobs.length} element${g.jobs.length === 1 ? '' : 's'}]`)),
    h('td', {}, first.spec.name || '-'), h('td', {}, first.user),
    h('td', { class: 'counts' }, stateCounts(states)), h('td', {}, `${cards(first)} each`), h('td', {}, ago(first.submitted_at)),
    h('td', { class: 'reason' }, extra ? '' : first.reason || ''));
}

function jobTable(jobs, extra) {
  if (!jobs.length) return h('p', { class: 'empty' }, 'None.');
  return h('div', { class: 'scroll' }, h('table', { class: 'jobs' },
    h('thead', {}, h('tr', {}, ['#', 'job', 'name', 'user', 'state', 'cards', 'submitted', extra ? 'where / why' : 'reason'].map((c) => h('th', {}, c)))),
    h('tbody', {}, groupArrays(jobs).map((j, i) => (j.group ? arrayRow(j, i, extra) : h('tr', { 'data-job': j.id },
      h('td', {}, j.queue_position ?? i + 1), h('td', {}, jobLink(j)), h('td', {}, j.spec.name || '-'), h('td', {}, j.user),
      h('td', {}, stateBadge(j.state)), h('td', {}, cards(j)), h('td', {}, ago(j.submitted_at)),
      h('td', { class: 'reason' }, extra ? extra(j) : j.reason || '',
        j.estimated_start ? h('span', { class: 'eta' }, ` · starts ~${when(j.estimated_start)}`) : null)))))));
}

// --- queue ---
export function queueView(root) {
  const body = h('div');
  append(root, [h('h1', {}, 'Queue'), body]);
  return {
    update(data) {
      clear(body);
      const jobs = data.jobs || [];
      const seq = (j) => Number(j.id.replace(/\D/g, '')) || 0;
      const pending = jobs.filter((j) => j.state === 'pending')
        .sort((a, b) => (a.queue_position ?? 0) - (b.queue_position ?? 0) || (b.spec.priority || 0) - (a.spec.priority || 0) || seq(a) - seq(b));
      const running = jobs.filter((j) => j.state === 'running' || j.state === 'assigned');
      const recent = jobs.filter((j) => TERMINAL.has(j.state)).slice(0, 20);
      const where = (j) => (j.allocations || []).map((a) => `${a.node}[${a.module_ids.join(',')}]`).join(' ');
      append(body, [errorLine(data),
        h('h2', {}, `Pending (${pending.length})`), h('p', { class: 'hint' }, 'In the order the scheduler considers them: priority, then submission.'),
        h('div', { id: 'pending' }, jobTable(pending)),
        h('h2', {}, `Running (${running.length})`), h('div', { id: 'running' }, jobTable(running, where)),
        h('h2', {}, 'Recent'), h('div', { id: 'recent' }, jobTable(recent))]);
    },
  };
}

// --- job ---
// The job's stored state history (GET /v1/jobs/{id}/events), oldest first. A
// scheduler without one (older, or a follower) leaves `events` null: then the
// job's own times.
function historyTable(j, events) {
  if (!events) {
    const hist = [['submitted', j.submitted_at], ['started', j.started_at], ['finished', j.finished_at]].filter((x) => x[1]);
    return h('ul', { class: 'history' }, hist.map(([k, v]) => h('li', {}, `${k} ${when(v)}`)));
  }
  return h('div', { class: 'scroll' }, h('table', { class: 'history', id: 'history' },
    h('thead', {}, h('tr', {}, ['when', 'event', 'attempt', 'nodes', 'reason'].map((c) => h('th', {}, c)))),
    h('tbody', {}, events.map((e) => h('tr', { 'data-event': e.event, 'data-attempt': e.attempt },
      h('td', { title: e.at }, when(e.at)),
      h('td', {}, stateBadge(e.state), e.event !== e.state ? h('span', { class: 'event' }, ` ${e.event}`) : null,
        e.by ? h('span', { class: 'by' }, ` by ${e.by}`) : null),
      h('td', {}, e.attempt),
      h('td', {}, (e.nodes || []).flatMap((n, i) => [i ? ', ' : '', h('a', { href: `#/node/${encodeURIComponent(n)}` }, n)])),
      h('td', { class: 'reason' }, e.reason || '', e.exit_code !== undefined ? ` (exit ${e.exit_code})` : ''))))));
}

// An array's parent: its elements by state (the scheduler's counts) and those of
// its elements the listing holds.
function arraySection(j, elements) {
  const a = j.array;
  return h('section', { id: 'array', 'data-count': a.count },
    h('h2', {}, `Array of ${a.count}`, h('small', {}, ` · at most ${a.parallel} at once`)),
    h('p', { class: 'counts' }, stateCounts(a.states || {})),
    elements && elements.length ? jobTable(elements.slice().sort((x, y) => x.array_index - y.array_index).map((e) => ({ ...e, array_id: undefined })))
      : h('p', { class: 'empty' }, 'No element listed.'),
    elements && elements.length < a.count ? h('p', { class: 'hint' }, `${elements.length} of ${a.count} elements listed.`) : null);
}

export function jobView(root, id, ctx) {
  const head = h('div');
  const body = h('div');
  const rank = h('input', { id: 'log-rank', type: 'number', min: 0, value: 0, 'aria-label': 'rank' });
  const follow = h('button', { id: 'log-follow', type: 'button' }, 'Follow');
  const pane = h('pre', { id: 'log', class: 'log', 'aria-live': 'off' });
  let abort = null;
  const stopLog = () => { if (abort) abort.abort(); abort = null; };
  const startLog = () => {
    stopLog();
    clear(pane);
    abort = new AbortController();
    const signal = abort.signal;
    let bytes = 0;
    pane.dataset.rank = rank.value;
    ctx.api.stream(`/v1/jobs/${encodeURIComponent(id)}/logs?rank=${Number(rank.value) || 0}&follow=true`, (t) => {
      bytes += t.length;
      // Keeps the pane bounded: the last 256 KiB.
      pane.append(t);
      if (bytes > 262144) { pane.textContent = pane.textContent.slice(-196608); bytes = 196608; }
      pane.scrollTop = pane.scrollHeight;
    }, signal).catch((e) => { if (!signal.aborted) pane.append(`\n[${e.message}]`); });
  };
  follow.addEventListener('click', startLog);
  append(root, [h('p', { class: 'crumbs' }, h('a', { href: '#/queue' }, 'Queue'), ' › ', id), head, body,
    h('h2', {}, 'Log'), h('div', { class: 'filters' }, h('label', { for: 'log-rank' }, 'rank'), rank, follow), pane]);
  let logStarted = false;
  const actions = h('div', { class: 'actions' });
  // POST /v1/jobs/{id}/<action>: cancel, and (issue 31) hold, release and requeue.
  const control = (action, label, cls) => h('button', {
    id: action, type: 'button', class: cls, hidden: true,
    onclick: async () => {
      try { await ctx.api.post(`/v1/jobs/${encodeURIComponent(id)}/${action}`); } catch (e) { ctx.data.error = e.message; }
      ctx.refresh(['job']);
    },
  }, label);
  const hold = control('hold', 'Hold', '');
  const release = control('release', 'Release', '');
  const requeue = control('requeue', 'Requeue', '');
  const cancel = control('cancel', 'Cancel job', 'danger');
  actions.append(hold, release, requeue, cancel);
  head.after(actions);
  return {
    update(data) {
      const j = data.job;
      clear(head);
      clear(body);
      if (!j || j.id !== id) {
        body.append(errorLine(data) || h('p', {}, 'Loading…'));
        return;
      }
      const who = data.whoami || {};
      const mayCancel = !TERMINAL.has(j.state) && (who.role === 'admin' || who.name === j.user);
      head.append(h('h1', {}, j.spec.name || j.id, ' ', h('span', { id: 'job-state' }, stateBadge(j.state))),
        h('p', { class: 'meta' }, `${j.id} · ${j.user} · attempt ${j.attempt}`, j.reason ? ` · ${j.reason}` : '',
          j.exit_code !== undefined && j.exit_code !== null ? ` · exit ${j.exit_code}` : ''),
        errorLine(data));
      cancel.hidden = !mayCancel;
      // A user may release only their own hold; an admin any.
      hold.hidden = !mayCancel || j.state !== 'pending' || Boolean(j.held_by);
      release.hidden = !mayCancel || !j.held_by || (who.role !== 'admin' && who.name !== j.held_by);
      requeue.hidden = !mayCancel || (j.state !== 'assigned' && j.state !== 'running');
      if (j.array) body.append(arraySection(j, j.elements));
      const events = data.events && data.events.job_id === id ? data.events.events : null;
      body.append(h('div', { class: 'cols' },
        h('section', {}, h('h2', {}, 'State history'), historyTable(j, events),
          h('h2', {}, 'Allocations'),
          (j.allocations || []).length ? h('table', { class: 'alloc' },
            h('thead', {}, h('tr', {}, h('th', {}, 'rank'), h('th', {}, 'node'), h('th', {}, 'modules'))),
            h('tbody', {}, j.allocations.map((a) => h('tr', { 'data-alloc': a.node },
              h('td', {}, a.rank), h('td', {}, h('a', { href: `#/node/${encodeURIComponent(a.node)}` }, a.node)),
              h('td', { 'data-modules': a.module_ids.join(',') }, a.module_ids.join(', ')))))) : h('p', { class: 'empty' }, 'Not placed.')),
        h('section', {}, h('h2', {}, 'Spec'), h('pre', { class: 'spec' }, JSON.stringify(j.spec, null, 2)),
          j.private ? h('p', { class: 'hint' }, 'Command and environment are the owner\'s and the admins\' to see.') : null)));
      if (!logStarted && (j.allocations || []).length && !j.private) {
        logStarted = true;
        startLog();
      }
    },
    unmount: stopLog,
  };
}

export { shortJob };
