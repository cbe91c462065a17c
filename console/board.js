// A node drawn as its board: one cell per module id (8 on a Gaudi baseboard), each
// marked by what holds it, with the free valid groups outlined.
//
// Not colour alone: a busy card is striped and shows its job number, an unhealthy one
// ✕, an absent one ∅ with a dashed edge, a free one ○.
import { h, jobColour } from './dom.js';

// Where each valid Gaudi group sits on the 4x2 drawing (modules 0-3 above 4-7).
const GROUP_CLASS = {
  '0,1': 'g-p0', '2,3': 'g-p1', '4,5': 'g-p2', '6,7': 'g-p3',
  '0,1,2,3': 'g-q0', '4,5,6,7': 'g-q1', '0,1,2,3,4,5,6,7': 'g-o',
};

// The free groups of sizes 2, 4, 8 that no larger free group contains.
export function maximalFreeGroups(freeGroups) {
  const all = [];
  for (const size of ['8', '4', '2']) for (const g of (freeGroups && freeGroups[size]) || []) all.push(g);
  const out = [];
  for (const g of all) {
    if (out.some((big) => g.every((m) => big.includes(m)))) continue;
    out.push(g);
  }
  return out;
}

export function shortJob(id) {
  return id.replace(/^j-0*/, '');
}

export function board(node, { compact = false } = {}) {
  // Cells sit at fixed places (style.css) so that group outlines can span them.
  const devices = (node.inventory && node.inventory.devices) || [];
  const byModule = new Map(devices.map((d) => [d.module_id, d]));
  const slots = Math.max(8, ...devices.map((d) => d.module_id + 1));
  const cells = [];
  for (let m = 0; m < slots; m++) {
    const d = byModule.get(m);
    let kind = 'free';
    let mark = '○';
    let title = `module ${m}: free`;
    if (!d) {
      kind = 'absent';
      mark = '∅';
      title = `module ${m}: absent (not reported by the node)`;
    } else if (d.healthy === false) {
      kind = 'unhealthy';
      mark = '✕';
      title = `module ${m}: unhealthy${d.health_reason ? ` (${d.health_reason})` : ''}`;
    } else if (d.job) {
      kind = 'busy';
      mark = shortJob(d.job);
      title = `module ${m}: ${d.job}`;
    }
    if (d && d.job && kind !== 'busy') title += `, held by ${d.job}`;
    cells.push(h('div', {
      class: `mod ${kind}${d && d.job ? ` jc${jobColour(d.job)}` : ''}`,
      'data-module': m,
      'data-kind': kind,
      'data-job': d && d.job,
      title,
    }, h('span', { class: 'mid' }, m), h('span', { class: 'mark' }, mark)));
  }
  const outlines = slots === 8 ? maximalFreeGroups(node.free_groups).map((g) => {
    const key = g.join(',');
    return h('div', { class: `group ${GROUP_CLASS[key] || ''}`, 'data-group': key, title: `free group {${key}}` });
  }) : [];
  return h('div', { class: `board${compact ? ' compact' : ''}`, 'data-board': node.name }, cells, outlines);
}
