'use strict';
// The dashboard's pages: a fleet table kept live by the server's event
// stream, and a cluster page refreshed on every change. Every value is put
// into the page as text (textContent), never as markup.

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function age(t) {
  const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  if (s < 120) return Math.round(s) + 's';
  if (s < 7200) return Math.round(s / 60) + 'm';
  if (s < 172800) return Math.round(s / 3600) + 'h';
  return Math.round(s / 86400) + 'd';
}

function condCell(c, extra) {
  const td = el('td', c.status, c.status + (extra ? ' ' + extra : ''));
  td.title = [c.reason, c.message].filter(Boolean).join(': ');
  return td;
}

function renderFleet(fleet) {
  const tbody = document.querySelector('#fleet tbody');
  const rows = [];
  for (const c of fleet.clusters) {
    const tr = el('tr');
    tr.dataset.cluster = c.namespace + '/' + c.name;
    if (c.degraded.status === 'True') tr.classList.add('degraded');
    if (c.available.status !== 'True') tr.classList.add('unavailable');
    const name = el('td');
    const a = el('a', c.namespace + '/' + c.name);
    a.href = '/cluster?namespace=' + encodeURIComponent(c.namespace) + '&name=' + encodeURIComponent(c.name);
    name.appendChild(a);
    if (c.hibernated) name.appendChild(el('span', ' (hibernated)'));
    tr.append(name, el('td', c.version || '-'), condCell(c.available, 'available-cell'),
      condCell(c.progressing), condCell(c.degraded, 'degraded-cell'),
      el('td', c.readyNodes + '/' + c.nodes, 'nodes'), el('td', age(c.created)), el('td', c.endpoint || '-'));
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
  document.getElementById('empty').hidden = fleet.clusters.length > 0;
}

function fillTable(id, items, cells) {
  const rows = items.map((item) => {
    const tr = el('tr');
    tr.append(...cells(item));
    return tr;
  });
  document.querySelector('#' + id + ' tbody').replaceChildren(...rows);
}

function chart(id, points, label) {
  const svg = document.getElementById(id);
  const ns = 'http://www.w3.org/2000/svg';
  svg.replaceChildren();
  const known = points.filter((p) => p.v !== null && p.v !== undefined);
  if (known.length === 0) {
    const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', '4'); t.setAttribute('y', '44');
    t.textContent = 'no data yet';
    svg.appendChild(t);
    return;
  }
  const t0 = Date.now() - 3600 * 1000;
  const maxV = Math.max(...known.map((p) => p.v), 1e-9);
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', known.map((p) => {
    const x = Math.max(0, (p.t - t0) / (3600 * 1000)) * 300;
    const y = 76 - (p.v / maxV) * 66;
    return x.toFixed(1) + ',' + y.toFixed(1);
  }).join(' '));
  svg.appendChild(line);
  const t = document.createElementNS(ns, 'text');
  t.setAttribute('x', '4'); t.setAttribute('y', '10');
  t.textContent = label + ' max ' + (Math.round(maxV * 100) / 100);
  svg.appendChild(t);
}

function renderCluster(d) {
  document.getElementById('name').textContent = d.namespace + '/' + d.name;
  document.title = 'hypershift — ' + d.name;
  const s = document.getElementById('summary');
  s.replaceChildren(el('span', 'Version ' + (d.version || '-') + ' · endpoint ' + (d.endpoint || '-') +
    ' · nodes ' + d.readyNodes + '/' + d.nodes + ' ready · age ' + age(d.created)));
  fillTable('conditions', d.conditions || [], (c) => [el('td', c.type), condCell(c), el('td', c.reason || ''), el('td', c.message || ''), el('td', age(c.since) + ' ago')]);
  fillTable('components', d.components || [], (c) => [el('td', c.name), el('td', c.phase, c.phase === 'Running' ? 'True' : 'Unknown'),
    el('td', c.restarts), el('td', c.lastExitReason || '-'), el('td', c.startedAt ? age(c.startedAt) + ' ago' : '-'), el('td', c.version || '-')]);
  fillTable('pools', d.pools || [], (p) => [el('td', p.name), el('td', p.platform), el('td', p.readyReplicas + '/' + p.replicas), el('td', p.version || '-')]);
  fillTable('events', d.events || [], (e) => [el('td', age(e.time) + ' ago'), el('td', e.type), el('td', e.reason), el('td', e.object), el('td', e.message + (e.count > 1 ? ' (×' + e.count + ')' : ''))]);
  const h = d.history || [];
  chart('latency', h.map((p) => ({ t: new Date(p.at).getTime(), v: p.latencyMillis })), 'ms');
  chart('restarts', h.map((p) => ({ t: new Date(p.at).getTime(), v: p.restarts })), 'restarts');
}

function connect(onFleet) {
  const status = document.getElementById('status');
  const source = new EventSource('/api/stream');
  source.addEventListener('fleet', (ev) => {
    status.textContent = 'live · ' + new Date().toLocaleTimeString();
    onFleet(JSON.parse(ev.data));
  });
  source.onerror = () => { status.textContent = 'reconnecting…'; };
}

function main() {
  if (document.body.dataset.page === 'fleet') {
    connect(renderFleet);
    return;
  }
  const q = new URLSearchParams(location.search);
  const url = '/api/cluster?namespace=' + encodeURIComponent(q.get('namespace') || '') + '&name=' + encodeURIComponent(q.get('name') || '');
  let pending = false;
  const refresh = () => {
    if (pending) return;
    pending = true;
    fetch(url).then((r) => {
      if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
      return r.json();
    }).then(renderCluster).catch((err) => {
      document.getElementById('status').textContent = 'error: ' + err.message;
    }).finally(() => { pending = false; });
  };
  connect(refresh);
  setInterval(refresh, 15000);
}

main();
