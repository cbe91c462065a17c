// Small DOM helpers. Text always goes in as text (never as HTML), so nothing the
// API returns can inject markup.

export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

export function append(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';
export function s(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) e.append(c);
  return e;
}

export function clear(e) {
  while (e.firstChild) e.removeChild(e.firstChild);
  return e;
}

// "3 s ago", "5 min ago"; "-" when absent.
export function ago(iso) {
  if (!iso) return '-';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (Number.isNaN(s)) return iso;
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function when(iso) {
  if (!iso) return '-';
  return `${iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} (${ago(iso)})`;
}

// A stable colour slot (0..9) for a job id, so a job keeps its colour everywhere.
export function jobColour(id) {
  let x = 0;
  for (const c of id) x = (x * 31 + c.charCodeAt(0)) >>> 0;
  return x % 10;
}

const STATE_SYMBOL = {
  pending: '◌', assigned: '◔', running: '▶', succeeded: '✓', failed: '✕', cancelled: '⊘', unknown: '?',
};
export function stateBadge(state) {
  return h('span', { class: `badge st-${state}`, 'data-state': state }, `${STATE_SYMBOL[state] || ''} ${state}`);
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
