// The reservations view (#/reservations): nodes reserved for a window (issue 32;
// GET /v1/reservations, admins only: others see the refusal). Refetched when nodes
// change, since making or deleting a reservation counts as a node change.
import { h, clear, append, when } from './dom.js';

const FOR = (r) => {
  if (r.maintenance) return 'maintenance';
  const parts = [];
  if ((r.users || []).length) parts.push(`users ${r.users.join(',')}`);
  if ((r.projects || []).length) parts.push(`projects ${r.projects.join(',')}`);
  return parts.join('; ') || 'admins only';
};

export function reservationsView(root) {
  const body = h('div', { id: 'reservations' });
  append(root, [h('h1', {}, 'Reservations'), body]);
  return {
    update(data) {
      clear(body);
      if (data.error) body.append(h('p', { class: 'error', role: 'alert' }, `⚠ ${data.error}`));
      const list = data.reservations;
      if (!list) {
        if (!data.error) body.append(h('p', {}, 'Loading…'));
        return;
      }
      if (!list.length) {
        body.append(h('p', { class: 'empty' }, 'No reservations.'));
        return;
      }
      body.append(h('div', { class: 'scroll' }, h('table', { class: 'jobs' },
        h('thead', {}, h('tr', {}, ['name', 'state', 'start', 'end', 'nodes', 'for'].map((c) => h('th', {}, c)))),
        h('tbody', {}, list.map((r) => h('tr', { 'data-reservation': r.name },
          h('td', {}, r.name), h('td', { 'data-k': 'state' }, r.state), h('td', {}, when(r.start)), h('td', {}, when(r.end)),
          h('td', {}, r.nodes.map((n, i) => [i ? ', ' : '', h('a', { href: `#/node/${encodeURIComponent(n)}` }, n)])),
          h('td', {}, FOR(r))))))));
    },
  };
}
