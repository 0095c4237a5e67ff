'use strict';
// The dashboard's pages: a fleet table kept live by the server's event
// stream, and a cluster page refreshed on every change; their forms and
// buttons make changes (create, scale, hibernate, resume, upgrade, rotate
// CA) with a POST of JSON that carries the X-Hypershift-Dashboard header,
// which the server requires of every change. Every value is put into the
// page as text (textContent), never as markup.

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
  s.replaceChildren(el('span', 'Version ' + (d.version || '-') + (d.desiredVersion && d.desiredVersion !== d.version ? ' (to ' + d.desiredVersion + ')' : '') +
    (d.hibernationEnabled ? ' · hibernation asked' : '') + (d.hibernated ? ' · hibernated' : '') + ' · endpoint ' + (d.endpoint || '-') +
    ' · nodes ' + d.readyNodes + '/' + d.nodes + ' ready · age ' + age(d.created)));
  fillTable('conditions', d.conditions || [], (c) => [el('td', c.type), condCell(c), el('td', c.reason || ''), el('td', c.message || ''), el('td', age(c.since) + ' ago')]);
  fillTable('components', d.components || [], (c) => [el('td', c.name), el('td', c.phase, c.phase === 'Running' ? 'True' : 'Unknown'),
    el('td', c.restarts), el('td', c.lastExitReason || '-'), el('td', c.startedAt ? age(c.startedAt) + ' ago' : '-'), el('td', c.version || '-')]);
  fillTable('pools', d.pools || [], (p) => [el('td', p.name), el('td', p.platform), el('td', p.desired === undefined ? '-' : p.desired, 'desired'), el('td', p.readyReplicas + '/' + p.replicas), el('td', p.version || '-')]);
  renderOps(d);
  fillTable('events', d.events || [], (e) => [el('td', age(e.time) + ' ago'), el('td', e.type), el('td', e.reason), el('td', e.object), el('td', e.message + (e.count > 1 ? ' (×' + e.count + ')' : ''))]);
  const h = d.history || [];
  chart('latency', h.map((p) => ({ t: new Date(p.at).getTime(), v: p.latencyMillis })), 'ms');
  chart('restarts', h.map((p) => ({ t: new Date(p.at).getTime(), v: p.restarts })), 'restarts');
}

// change POSTs body to path and shows the answer in #result: what was done,
// or the refusal as the server gave it, with its HTTP status.
function change(path, body) {
  const result = document.getElementById('result');
  result.className = 'result';
  result.textContent = '…';
  delete result.dataset.status;
  return fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Hypershift-Dashboard': '1' },
    body: JSON.stringify(body),
  }).then((r) => r.text().then((text) => {
    result.dataset.status = String(r.status);
    if (!r.ok) throw new Error('HTTP ' + r.status + ' ' + r.statusText + ': ' + text.trim());
    result.className = 'result ok';
    result.textContent = JSON.parse(text).message;
  })).catch((err) => {
    result.className = 'result error';
    result.textContent = err.message;
  });
}

// onSubmit runs body(form) → change(path, …) instead of the form's own
// submission.
function onSubmit(id, path, body) {
  const form = document.getElementById(id);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    change(path, body(form.elements));
  });
}

function setupFleet() {
  onSubmit('create', '/api/clusters', (f) => {
    const body = { name: f.name.value.trim(), namespace: f.namespace.value.trim(), platform: f.platform.value, availabilityPolicy: f.availabilityPolicy.value };
    if (f.nodePoolReplicas.value !== '') body.nodePoolReplicas = Number(f.nodePoolReplicas.value);
    return body;
  });
  // Disabled in the page until here: a submit without the listener would
  // be the browser's own, a reload that creates nothing.
  document.querySelector('#create button[type=submit]').disabled = false;
}

function setupCluster(ref) {
  const post = (path, extra) => change(path, Object.assign({ namespace: ref.namespace, name: ref.name }, extra || {}));
  document.getElementById('hibernate').addEventListener('click', () => post('/api/cluster/hibernate'));
  document.getElementById('resume').addEventListener('click', () => post('/api/cluster/resume'));
  document.getElementById('rotate-ca').addEventListener('click', () => post('/api/cluster/rotate-ca'));
  onSubmit('upgrade', '/api/cluster/upgrade', (f) => Object.assign({}, ref, { kubernetesVersion: f.kubernetesVersion.value.trim() }));
  onSubmit('scale', '/api/nodepool/scale', (f) => ({ namespace: ref.namespace, name: f.name.value, replicas: Number(f.replicas.value) }));
}

// renderOps keeps the operation controls in step with the cluster, without
// touching what the user is typing. The page starts with them disabled: a
// click before the script has its listeners, or before the page knows the
// cluster's state, would be lost or wrong.
function renderOps(d) {
  document.getElementById('hibernate').disabled = d.hibernationEnabled;
  document.getElementById('resume').disabled = !d.hibernationEnabled;
  document.getElementById('rotate-ca').disabled = false;
  document.querySelectorAll('#upgrade button, #scale button').forEach((b) => { b.disabled = false; });
  const version = document.querySelector('#upgrade input');
  version.placeholder = d.desiredVersion || '';
  const select = document.querySelector('#scale select');
  const names = (d.pools || []).map((p) => p.name);
  if (names.join() !== Array.from(select.options).map((o) => o.value).join()) {
    select.replaceChildren(...names.map((n) => el('option', n)));
  }
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
    setupFleet();
    connect(renderFleet);
    return;
  }
  const q = new URLSearchParams(location.search);
  setupCluster({ namespace: q.get('namespace') || '', name: q.get('name') || '' });
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
