// The admin status page: polls /admin/state every 500 ms and redraws. Every value goes in as
// text (tenant names, reasons and request ids come from clients and workers), never as HTML.
'use strict';
(function () {
  const POLL_MS = 500;
  const STALE_MS = 2000;
  const $ = (id) => document.getElementById(id);
  const shownAt = new Map(); // worker url -> [state, Date.now() when the page first showed it]
  let lastOk = 0;

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells) { // cells: [text, class] or a Node
    const tr = document.createElement('tr');
    for (const c of cells) {
      if (c instanceof Node) { tr.appendChild(c); } else { tr.appendChild(el('td', c[0], c[1])); }
    }
    return tr;
  }
  function fill(tbody, rows, columns, emptyText) {
    tbody.replaceChildren(...rows);
    if (rows.length === 0) {
      const td = el('td', emptyText, 'empty');
      td.colSpan = columns;
      tbody.appendChild(row([td]));
    }
  }
  function num(n) { // exact below 10 000, then k / M with one decimal
    if (n === null || n === undefined || Number.isNaN(n)) return '-';
    const a = Math.abs(n);
    if (a >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (n / 1e3).toFixed(1) + 'k';
    return Number.isInteger(n) ? String(n) : n.toFixed(1);
  }
  function dur(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) return '-';
    if (ms < 1000) return Math.round(ms) + ' ms';
    const s = ms / 1000;
    if (s < 60) return s.toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + Math.floor(s % 60) + 's';
    return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  }
  function ofLimit(value, limit, unit) {
    return limit > 0 ? num(value) + ' / ' + num(limit) + unit : num(value) + unit;
  }
  function badge(text, cls) { return el('span', text, 'badge ' + cls); }

  // The queue and budget of the gateway or a pool, in its section (at: the section's element of a class).
  function drawAdmission(at, q, l) {
    at('queue-queued').textContent = q.queued;
    at('queue-max').textContent = num(l.max_queued_requests);
    meter(at('queue-meter'), q.queued, l.max_queued_requests);
    at('pending-tokens').textContent = num(q.pending_tokens);
    at('pending-max').textContent = num(l.max_pending_tokens);
    meter(at('pending-meter'), q.pending_tokens, l.max_pending_tokens);
    at('inflight-prefill').textContent = num(q.inflight_prefill_tokens);
    at('dispatched').textContent = num(q.dispatched);
    at('prefill-rate').textContent = num(q.prefill_tokens_per_second) + ' tok/s'
      + (q.throughput_measured ? ' (measured)' : ' (not yet measured)');
    at('slack').textContent = q.prediction_slack_seconds === undefined ? '-' : dur(q.prediction_slack_seconds * 1000);
    const rows = [];
    for (const [name, c] of Object.entries(q.by_class || {})) {
      const tenants = Object.entries(c.tenants || {}).sort((a, b) => b[1] - a[1])
        .map(([t, n]) => t + ': ' + n).join(', ');
      rows.push(row([[name], [c.queued, 'num'], [tenants || '-', 'wrap']]));
    }
    fill(at('classes').querySelector('tbody'), rows, 3, 'no priority classes');
  }
  function meter(m, value, max) {
    m.max = max > 0 ? max : 1;
    m.low = m.max * 0.5;
    m.high = m.max * 0.85;
    m.optimum = 0;
    m.value = value;
  }

  // One row per worker; with pools, a first cell naming the worker's pool (its data-pool too).
  function workerRows(workers, l, now, pool) {
    const rows = [];
    for (const w of workers) {
      const prev = shownAt.get(w.url);
      if (!prev || prev[0] !== w.state) shownAt.set(w.url, [w.state, Date.now()]);
      const t = w.telemetry || {};
      const prefill = w.role === 'prefill';
      const since = w.state_since ? now - Date.parse(w.state_since) : null;
      const stateCell = el('td', null, 'state');
      stateCell.appendChild(badge(w.state, 'state-' + w.state));
      if (!w.usable) stateCell.appendChild(el('span', ' not usable', 'muted'));
      const problems = (w.identity && w.identity.problems) || [];
      const tr = row([[w.role], [w.worker, 'worker'], stateCell, [since === null ? '-' : dur(since), 'num'],
        [w.state_reason || problems.join('; ') || '', 'wrap reason'],
        [w.inflight, 'num'],
        [ofLimit(w.window.requests, prefill ? l.prefill_max_inflight_requests : l.decode_max_inflight_streams, ''), 'num'],
        [prefill ? ofLimit(w.window.tokens, l.prefill_max_inflight_tokens, '') : '-', 'num'],
        [w.prefill_rate ? num(w.prefill_rate.tokens_per_second) + ' tok/s ' + w.prefill_rate.source : '-', 'num'],
        [num(t.queue_requests), 'num'], [num(t.running_requests), 'num'],
        [t.token_usage === null || t.token_usage === undefined ? '-' : (t.token_usage * 100).toFixed(0) + '%', 'num'],
        [t.age_seconds === null || t.age_seconds === undefined ? 'never' : dur(t.age_seconds * 1000)
          + (t.stale ? ' stale' : ''), 'num' + (t.stale ? ' status-5' : '')],
        [w.identity ? [w.identity.server, w.identity.version].filter(Boolean).join(' ') : '']]);
      if (pool !== undefined) {
        tr.prepend(el('td', pool, 'pool'));
        tr.dataset.pool = pool;
      }
      tr.dataset.worker = w.worker;
      tr.dataset.url = w.url;
      tr.dataset.state = w.state;
      tr.dataset.stateShownAt = shownAt.get(w.url)[1];
      tr.title = w.url;
      rows.push(tr);
    }
    return rows;
  }

  function forgetGone(urls) {
    for (const url of [...shownAt.keys()]) if (!urls.has(url)) shownAt.delete(url);
  }

  // With pools: configured (the implicit pool of a gateway without them names no model: it takes any).
  function pooled(s) {
    const p = s.pools || [];
    return p.length > 1 || (p.length === 1 && (p[0].models || []).length > 0);
  }

  // A section per pool (without pools, one for the gateway: name ''), built once from the template and then
  // only updated, so a reader of the page (or a test) holding an element keeps it across polls.
  function poolSection(name) {
    const list = $('pools');
    for (const sec of list.children) if (sec.dataset.pool === name) return sec;
    const sec = $('pool-template').content.firstElementChild.cloneNode(true);
    sec.dataset.pool = name;
    for (const h of sec.querySelectorAll('.pool-heading')) h.hidden = name === '';
    list.appendChild(sec);
    return sec;
  }

  // One section: p is a pool of /admin/state's "pools", or, without pools, the state itself (its top-level
  // limits, queue, workers and KV events are then the gateway's).
  function drawSection(p, name, now) {
    const sec = poolSection(name);
    const at = (cls) => sec.querySelector('.' + cls);
    if (name !== '') {
      at('pool-name').textContent = p.name + (p.default ? ' (default)' : '');
      at('pool-models').textContent = (p.models || []).join(', ') + ' · ' + p.disaggregation;
      const r = at('pool-readiness');
      r.textContent = p.ready ? 'serving' : 'not serving: ' + (p.readiness || '?');
      r.className = 'badge pool-readiness ' + (p.ready ? 'ready' : 'not-ready');
    }
    drawAdmission(at, p.queue, p.limits);
    fill(at('workers').querySelector('tbody'), workerRows(p.workers, p.limits, now, name === '' ? undefined : name),
      name === '' ? 14 : 15, 'no workers');
    drawKvEvents(at('kv-events'), p.kv_events);
    drawLimits(at('limits'), p.limits);
  }

  function drawSections(s) {
    const now = Date.parse(s.time);
    const shown = pooled(s) ? s.pools.map((p) => [p, p.name]) : [[s, '']];
    const names = new Set(shown.map(([, name]) => name));
    const urls = new Set();
    for (const [p, name] of shown) {
      drawSection(p, name, now);
      p.workers.forEach((w) => urls.add(w.url));
    }
    for (const sec of [...$('pools').children]) if (!names.has(sec.dataset.pool)) sec.remove();
    forgetGone(urls);
  }

  function drawCoordination(c) {
    const section = $('coordination');
    section.hidden = !c;
    if (!c) return;
    const kv = [['Redis', c.up ? 'up' : 'down'], ['Limits from', c.mode], ['Fleet', c.fleet],
      ['Serving', c.serving ? 'yes' : 'no'], ['Replica', c.replica_id + ' (generation ' + c.generation + ')'],
      ['Replicas', c.replicas], ['Last lease', dur(c.last_lease_age_ms) + ' ago'],
      ['Renewal errors', c.renewal_errors], ['Late replies', c.late_replies]];
    if (c.reason) kv.push(['Reason', c.reason]);
    const grants = Object.entries(c.grants || {}).map(([k, v]) => k + ' ' + num(v)).join(', ');
    kv.push(['This replica\'s grants', grants || '-']);
    fill(document.querySelector('#coordination-summary tbody'),
      kv.map(([k, v]) => { const tr = row([[v, 'wrap']]); tr.prepend(el('th', k)); return tr; }), 2, '');
    const peers = (c.peers || []).map((p) => {
      const leases = Object.entries(p.leases || {}).map(([name, x]) =>
        name + ' ' + num(x.grant) + ' / ' + num(x.usage) + ' / ' + num(x.demand) + ' / ' + num(x.capacity)).join('; ');
      return row([[p.replica_id + (p.self ? ' (this one)' : '')], [p.generation, 'num'], [p.address || '-'],
        [dur(p.last_seen_ms_ago) + ' ago', 'num'], [leases || '-', 'wrap']]);
    });
    fill(document.querySelector('#peers tbody'), peers, 5, 'no live replicas');
  }

  function drawKvEvents(section, k) {
    section.hidden = !k;
    if (!k) return;
    section.querySelector('.kv-decisions').textContent = 'Routing decisions: ' + Object.entries(k.decisions || {})
      .map(([src, n]) => src + ' ' + num(n)).join(', ');
    fill(section.querySelector('tbody'), (k.workers || []).map((w) => row([[w.worker], [w.freshness],
      [num(w.blocks), 'num'], [num(w.events), 'num'], [num(w.gaps), 'num'],
      [w.last_event_age_seconds === null ? 'never' : dur(w.last_event_age_seconds * 1000) + ' ago', 'num']])),
    6, 'no prefill publishes KV events');
  }

  function drawErrors(s) {
    const now = Date.parse(s.time);
    fill(document.querySelector('#errors tbody'), (s.recent_errors || []).map((e) => row([
      [e.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')], [dur(now - Date.parse(e.at)), 'num'], [e.rid],
      [e.route], [e.status, 'num status-' + String(e.status).charAt(0)], [e.outcome], [e.detail, 'wrap']])),
    7, 'none since the gateway started');
  }

  function drawLimits(table, l) {
    const units = { max_queued_requests: 'req', max_pending_tokens: 'tok', max_request_tokens: 'tok',
      prefill_max_inflight_requests: 'req per prefill', prefill_max_inflight_tokens: 'tok per prefill',
      decode_max_inflight_streams: 'streams per decode' };
    const rows = Object.entries(l).map(([k, v]) => {
      // early_rejection is a switch: a number's formatting would throw on it and stop the whole redraw
      const text = typeof v === 'boolean' ? (v ? 'on' : 'off') : k.endsWith('_ms') ? dur(v)
        : num(v) + ' ' + (units[k] || '');
      const tr = row([[text, 'num']]);
      tr.prepend(el('th', k.replace(/_ms$/, '')));
      tr.dataset.limit = k;
      return tr;
    });
    fill(table.querySelector('tbody'), rows, 2, '');
  }

  function draw(s) {
    const r = $('readiness');
    r.textContent = s.draining ? 'draining' : s.ready ? 'ready' : 'not ready';
    r.className = 'badge ' + (s.draining ? 'draining' : s.ready ? 'ready' : 'not-ready');
    $('live-requests').textContent = s.live_requests;
    $('config-hash').textContent = s.config && s.config.hash ? s.config.hash : '-';
    drawSections(s);
    drawCoordination(s.coordination);
    drawErrors(s);
    document.body.dataset.stateTime = s.time;
  }

  function freshness(error) {
    const f = $('freshness');
    const age = Date.now() - lastOk;
    if (error && (lastOk === 0 || age > STALE_MS)) {
      f.textContent = 'no answer from the gateway for ' + (lastOk ? dur(age) : 'ever') + ': ' + error;
      f.className = 'stale';
    } else if (!error) {
      f.textContent = 'updated ' + new Date(lastOk).toLocaleTimeString();
      f.className = 'fresh';
    }
  }

  async function poll() {
    try {
      const res = await fetch('/admin/state', { cache: 'no-store', signal: AbortSignal.timeout(2000) });
      if (!res.ok) throw new Error('HTTP ' + res.status);
      const s = await res.json();
      lastOk = Date.now();
      try {
        draw(s);
      } catch (e) { // a fault of the page, not of the gateway: said in the console, where a test looks
        console.error('status page: redraw failed: ' + e);
        throw e;
      }
      freshness(null);
    } catch (e) {
      freshness(e.message || String(e));
    } finally {
      setTimeout(poll, POLL_MS); // the next poll starts after this one ended: never two at once
    }
  }
  poll();
}());
