// The usage view: card-hours of ended attempts by project or by user, and by model,
// over a window (GET /v1/usage; a user sees their own jobs' and their projects').
// Refetched when jobs change, since an attempt's usage is recorded as it ends.
import { h, clear, append, when } from './dom.js';

const WINDOWS = [[1, 'last 24 hours'], [7, 'last 7 days'], [30, 'last 30 days'], [90, 'last 90 days']];

function hours(cardSeconds) {
  const x = cardSeconds / 3600;
  return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(3);
}

// A bar as wide as `pct` of the largest (set through CSSOM: the CSP allows no style attribute).
function bar(pct) {
  const fill = h('span');
  fill.style.width = `${pct.toFixed(1)}%`;
  return h('div', { class: 'bar', role: 'img', 'aria-label': `${Math.round(pct)} % of the largest` }, fill);
}

export function usageView(root, _param, ctx) {
  const q = ctx.data.usageQuery;
  const by = h('select', { id: 'usage-by', 'aria-label': 'by' },
    h('option', { value: 'project' }, 'by project'), h('option', { value: 'user' }, 'by user'));
  const days = h('select', { id: 'usage-window', 'aria-label': 'window' },
    WINDOWS.map(([d, label]) => h('option', { value: d }, label)));
  by.value = q.by;
  days.value = String(q.days);
  const ask = () => {
    ctx.data.usageQuery = { by: by.value, days: Number(days.value) };
    ctx.data.usage = null;
    ctx.refresh(['usage']);
  };
  by.addEventListener('change', ask);
  days.addEventListener('change', ask);
  const body = h('div', { id: 'usage' });
  append(root, [h('h1', {}, 'Usage'), h('div', { class: 'filters' }, h('span', {}, 'Card-hours'), by, days), body]);
  return {
    update(data) {
      clear(body);
      const u = data.usage;
      if (data.error) body.append(h('p', { class: 'error', role: 'alert' }, `⚠ ${data.error}`));
      if (!u || u.by !== ctx.data.usageQuery.by) {
        body.append(h('p', {}, 'Loading…'));
        return;
      }
      // One card per project (or user): its total and its models.
      const keys = new Map();
      for (const row of u.usage) {
        const k = row[u.by];
        const e = keys.get(k) || { total: 0, jobs: 0, models: [] };
        e.total += row.card_seconds;
        e.jobs += row.jobs;
        e.models.push(row);
        keys.set(k, e);
      }
      const max = Math.max(1, ...[...keys.values()].map((e) => e.total));
      body.append(h('p', { class: 'hint' }, `From ${when(u.since)} to ${when(u.until)}; ended attempts only, clipped to the window.`));
      if (!keys.size) {
        body.append(h('p', { class: 'empty' }, 'No usage in this window.'));
        return;
      }
      const sorted = [...keys.entries()].sort((a, b) => b[1].total - a[1].total);
      body.append(h('div', { class: 'summary' }, sorted.map(([k, e]) => h('div', { class: 'stat usage-card', 'data-usage': k },
        h('h2', {}, k, ' ', h('small', {}, u.by)),
        h('p', { class: 'total' }, h('strong', { 'data-k': 'card-hours' }, hours(e.total)), ' card-hours · ',
          h('span', { 'data-k': 'jobs' }, e.jobs), ' attempts'),
        bar((100 * e.total) / max),
        h('table', { class: 'models' }, h('tbody', {}, e.models.map((m) => h('tr', { 'data-model': m.model },
          h('td', {}, m.model), h('td', {}, `${hours(m.card_seconds)} h`), h('td', {}, `${m.jobs} attempts`)))))))));
    },
  };
}
