/* The collscope report page: draws the aggregated history in #report-data with Apache ECharts.
   Every chart's container gets data-rendered="true" on ECharts' first 'finished' event, and
   <body> counts charts and rendered charts (data-charts, data-charts-rendered), so a headless
   browser can tell that every chart was drawn. Animations are off: the page is drawn once. */
(function () {
  'use strict';
  var R = JSON.parse(document.getElementById('report-data').textContent);
  var root = document.getElementById('report');
  var charts = [];
  var KIND_COLORS = { SLOW_RANK: '#d62728', SLOW_LINK: '#ff7f0e', SILENT_RANK: '#7b3294', UNIFORM_SLOWDOWN: '#1f77b4' };
  var ALERT_COLORS = { LATENCY_REGRESSION: 'rgba(31,119,180,0.13)', SLOW_RANK: 'rgba(214,39,40,0.13)', SLOW_LINK: 'rgba(255,127,14,0.15)', DEAD_RANK: 'rgba(123,50,148,0.15)' };
  var PHASE_COLORS = ['#8c564b', '#2ca02c', '#e6a100', '#9aa4b2', '#17becf'];
  var HEAT = ['#fffbe8', '#fde29a', '#fba45a', '#e8542f', '#a50f15'];

  // ---- small helpers ---------------------------------------------------------------------
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'class') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function pad(n) { return n < 10 ? '0' + n : '' + n; }
  function fmtTime(ms) {
    var d = new Date(ms);
    return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()) + ' ' +
      pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds());
  }
  function fmtClock(ms) { return fmtTime(ms).substring(11, 16); }
  function fmtUs(v) { return v == null ? '–' : (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' µs'; }
  function fmtDuration(ms) {
    if (ms % 86400000 === 0) return ms / 86400000 + ' d';
    if (ms % 3600000 === 0) return ms / 3600000 + ' h';
    if (ms % 60000 === 0) return ms / 60000 + ' min';
    return ms / 1000 + ' s';
  }
  function anchor(key) { return 'c-' + key.replace(/[^A-Za-z0-9_-]/g, '_'); }
  function num(v) { return el('td', { class: 'num', text: v == null ? '–' : String(v) }); }
  function note(text) { return el('p', { class: 'note', text: text }); }

  /** The bucket starts of the whole range: the category axis of the time heatmaps. */
  function buckets() {
    var out = [];
    for (var t = Math.floor(R.sinceMs / R.bucketMs) * R.bucketMs; t < R.untilMs; t += R.bucketMs) out.push(t);
    return out;
  }
  var BUCKETS = buckets();
  var BUCKET_INDEX = {};
  BUCKETS.forEach(function (t, i) { BUCKET_INDEX[t] = i; });

  /** Creates a chart in a new container; marks it rendered on the library's first 'finished'. */
  function chart(parent, name, height, option) {
    var box = el('div', { class: 'chart', 'data-chart': name, 'data-rendered': 'false' });
    box.style.height = height + 'px';
    parent.appendChild(box);
    document.body.setAttribute('data-charts', String(charts.length + 1));
    var c = echarts.init(box, null, { renderer: 'canvas' });
    var done = false;
    c.on('finished', function () {
      if (done) return;
      done = true;
      box.setAttribute('data-rendered', 'true');
      var n = document.querySelectorAll('[data-chart][data-rendered="true"]').length;
      document.body.setAttribute('data-charts-rendered', String(n));
    });
    option.animation = false;
    c.setOption(option);
    charts.push(c);
    return c;
  }
  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
  window.collscopeCharts = charts; // for the console and the browser test

  function timeAxis() {
    return { type: 'time', min: R.sinceMs, max: R.untilMs, axisLabel: { formatter: function (v) { return fmtClock(v); }, hideOverlap: true } };
  }
  function bucketAxis() {
    return { type: 'category', data: BUCKETS.map(fmtClock), axisLabel: { hideOverlap: true }, splitArea: { show: false } };
  }
  function heatMap(max, label, min) {
    min = min || 0;
    return { min: min, max: max > min ? max : min + 1, calculable: true, orient: 'vertical', right: 0, top: 'middle', itemHeight: 140, text: [label, ''], inRange: { color: HEAT } };
  }

  // ---- header ----------------------------------------------------------------------------
  function header() {
    var t = R.totals;
    var firing = R.alerts.filter(function (a) { return a.endMs == null; }).length;
    root.appendChild(el('h1', { text: 'collscope report' }));
    root.appendChild(el('div', { class: 'meta', text: fmtTime(R.sinceMs) + ' – ' + fmtTime(R.untilMs) + ' UTC · history ' + R.history +
      (R.communicatorFilter ? ' · communicator ' + R.communicatorFilter : '') + ' · ' + fmtDuration(R.bucketMs) + ' per point · generated ' + R.generatedAt }));
    var tiles = el('div', { class: 'tiles' });
    [[t.communicators, 'communicators'], [t.windows, 'attributed windows'], [t.findingWindows, 'windows with findings'],
     [t.alerts, 'alerts'], [firing, 'alerts firing at the end'], [t.rankWindows, 'rank windows']].forEach(function (x) {
      tiles.appendChild(el('div', { class: 'tile' }, [el('b', { text: String(x[0]) }), el('span', { text: x[1] })]));
    });
    root.appendChild(tiles);
  }

  // ---- summary ---------------------------------------------------------------------------
  function summary() {
    root.appendChild(el('h2', { text: 'Communicators' }));
    if (R.communicators.length === 0) {
      root.appendChild(note('No attributed windows in this range' + (R.communicatorFilter ? ' for ' + R.communicatorFilter : '') + '.'));
      return;
    }
    root.appendChild(note('Most alerts first, then most windows with findings. The first ' + R.details.length +
      ' have a section of their own below (--top); --communicator NAME reports on one.'));
    var head = el('tr', null, ['communicator', 'ranks', 'windows', 'with findings', 'alerts', 'top culprit (windows)', 'max wait', 'max excess']
      .map(function (h) { return el('th', { text: h }); }));
    var rows = R.communicators.map(function (c) {
      var name = c.detailed ? el('a', { href: '#' + anchor(c.key), text: c.key }) : c.key;
      var alerts = el('td', { class: 'num' + (c.alertsFiring > 0 ? ' firing' : ''), text: c.alerts + (c.alertsFiring > 0 ? ' (' + c.alertsFiring + ' firing)' : '') });
      var pct = c.windows > 0 ? ' (' + Math.round(100 * c.findingWindows / c.windows) + ' %)' : '';
      return el('tr', null, [el('td', null, [name]), num(c.worldSize), num(c.windows), num(c.findingWindows + pct), alerts,
        el('td', { text: c.topCulprit ? c.topCulprit + ' (' + c.topCulpritWindows + ')' : '–' }), num(fmtUs(c.maxWaitUs)), num(fmtUs(c.maxExcessUs))]);
    });
    root.appendChild(el('div', { class: 'scroll' }, [el('table', null, [el('thead', null, [head]), el('tbody', null, rows)])]));
    if (R.communicatorsNotListed > 0) root.appendChild(note('… and ' + R.communicatorsNotListed + ' more communicators (narrow with --communicator).'));
  }

  function overview() {
    var o = R.overview;
    if (!o.communicators.length) return;
    root.appendChild(el('h3', { text: 'Windows with findings over time' }));
    root.appendChild(note('One row per communicator with findings or alerts, in the order of the table (' + o.communicators.length + ' shown); darker: more windows with findings in that ' + fmtDuration(R.bucketMs) + '.'));
    var max = 0;
    var data = o.cells.map(function (c) { max = Math.max(max, c[2]); return [BUCKET_INDEX[c[0]], c[1], c[2]]; });
    chart(root, 'overview', Math.max(160, 60 + 18 * o.communicators.length), {
      tooltip: { formatter: function (p) { return o.communicators[p.value[1]] + '<br>' + fmtTime(BUCKETS[p.value[0]]) + ': ' + p.value[2] + ' windows with findings'; } },
      grid: { left: 200, right: 70, top: 10, bottom: 30 },
      xAxis: bucketAxis(),
      yAxis: { type: 'category', data: o.communicators, inverse: true, axisLabel: { width: 190, overflow: 'truncate' } },
      visualMap: heatMap(max, 'windows'),
      series: [{ type: 'heatmap', data: data, progressive: 0 }]
    });
  }

  function alertsTable() {
    root.appendChild(el('h2', { text: 'Alerts' }));
    if (!R.alerts.length) { root.appendChild(note('No alert fired in this range.')); return; }
    var head = el('tr', null, ['started', 'resolved', 'communicator', 'kind', 'about', 'severity', 'message'].map(function (h) { return el('th', { text: h }); }));
    var rows = R.alerts.map(function (a) {
      return el('tr', null, [el('td', { text: fmtTime(a.startMs) }), el('td', { class: a.endMs == null ? 'firing' : '', text: a.endMs == null ? 'firing' : fmtTime(a.endMs) }),
        el('td', { text: a.communicator }), el('td', { text: a.kind }), el('td', { text: a.subject || '' }), el('td', { text: a.severity || '' }), el('td', { text: a.message || '' })]);
    });
    root.appendChild(el('div', { class: 'scroll' }, [el('table', null, [el('thead', null, [head]), el('tbody', null, rows)])]));
    if (R.alertsNotListed > 0) root.appendChild(note('… and ' + R.alertsNotListed + ' older alerts.'));
  }

  // ---- one communicator -------------------------------------------------------------------
  function alertAreas(alerts) {
    return alerts.map(function (a) {
      return [{ name: a.kind.replace('LATENCY_', '') + (a.subject ? ' ' + a.subject : ''), xAxis: Math.max(a.startMs, R.sinceMs), itemStyle: { color: ALERT_COLORS[a.kind] || 'rgba(0,0,0,0.08)' } },
              { xAxis: a.endMs == null ? R.untilMs : a.endMs }];
    });
  }

  function latencyChart(parent, d) {
    var L = d.latency;
    parent.appendChild(el('h3', { text: 'Latency: per-rank p50/p99, the collective\'s cost and its baseline' }));
    parent.appendChild(note('p50: median over ranks of their p50; p99: the largest p99 of any rank; featured ranks: those the findings named most. ' +
      'Band: baseline ±' + Math.round(100 * L.bandRel) + ' % (the alert rule\'s smallest effect); shaded spans: alerts firing.'));
    if (!L.t.length) { parent.appendChild(note('No rank windows in this range.')); return; }
    function pts(arr) { return L.t.map(function (t, i) { return [t, arr[i]]; }); }
    var lo = L.baseline.map(function (b) { return b == null ? null : b * (1 - L.bandRel); });
    var width = L.baseline.map(function (b) { return b == null ? null : 2 * b * L.bandRel; });
    var series = [
      { name: 'band', type: 'line', stack: 'band', data: pts(lo), symbol: 'none', lineStyle: { opacity: 0 }, silent: true, tooltip: { show: false } },
      { name: 'baseline ±' + Math.round(100 * L.bandRel) + ' %', type: 'line', stack: 'band', data: pts(width), symbol: 'none', lineStyle: { opacity: 0 }, areaStyle: { color: 'rgba(44,160,44,0.18)' }, tooltip: { show: false } },
      { name: 'baseline', type: 'line', data: pts(L.baseline), symbol: 'none', lineStyle: { type: 'dashed', color: '#2ca02c' }, itemStyle: { color: '#2ca02c' } },
      { name: 'collective cost', type: 'line', data: pts(L.collective), symbol: 'none', itemStyle: { color: '#1d2330' } },
      { name: 'p50 (median rank)', type: 'line', data: pts(L.p50Median), symbol: 'none', itemStyle: { color: '#1f77b4' } },
      { name: 'p99 (worst rank)', type: 'line', data: pts(L.p99Max), symbol: 'none', itemStyle: { color: '#9467bd' },
        markArea: { silent: true, label: { show: true, position: 'insideTop', fontSize: 10 }, data: alertAreas(d.alerts) } }
    ];
    L.ranks.forEach(function (r, i) {
      var color = ['#d62728', '#ff7f0e', '#8c564b'][i % 3];
      series.push({ name: 'rank ' + r.rank + ' p99', type: 'line', data: pts(r.p99), symbol: 'none', lineStyle: { width: 1.5 }, itemStyle: { color: color } });
      series.push({ name: 'rank ' + r.rank + ' p50', type: 'line', data: pts(r.p50), symbol: 'none', lineStyle: { width: 1, type: 'dotted' }, itemStyle: { color: color } });
    });
    var legend = series.map(function (s) { return s.name; }).filter(function (n) { return n !== 'band'; });
    chart(parent, 'latency:' + d.key, 340, {
      tooltip: { trigger: 'axis', formatter: function (ps) {
        if (!ps.length) return '';
        var i = ps[0].dataIndex;
        return fmtTime(L.t[i]) + ps.filter(function (p) {
          return p.seriesName !== 'band' && p.seriesName.indexOf('baseline ±') !== 0 && p.value[1] != null;
        }).map(function (p) {
          var v = p.value[1];
          var who = p.seriesName === 'p99 (worst rank)' && L.p99MaxRank[i] != null ? ' (rank ' + L.p99MaxRank[i] + ')' : '';
          return '<br>' + p.marker + p.seriesName + ': ' + fmtUs(v) + who;
        }).join('');
      } },
      legend: { data: legend, top: 0, type: 'scroll' },
      grid: { left: 60, right: 20, top: 40, bottom: 60 },
      xAxis: timeAxis(),
      yAxis: { type: 'value', name: 'µs', scale: false },
      dataZoom: [{ type: 'inside' }, { type: 'slider', height: 18, bottom: 8 }],
      series: series
    });
  }

  function p99Heatmap(parent, d) {
    var H = d.p99ByRank;
    var box = el('div');
    parent.appendChild(box);
    box.appendChild(el('h3', { text: 'p99 per rank over time' }));
    box.appendChild(note((H.block > 1 ? 'Each row: ' + H.block + ' ranks, their largest p99' : 'Each row: one rank, its largest p99') + ' per ' + fmtDuration(R.bucketMs) + '; colours from the typical p99 up.'));
    var data = [];
    var offset = BUCKET_INDEX[H.firstBucketMs] || 0;
    H.values.forEach(function (v, i) {
      if (v != null) data.push([offset + i % H.buckets, Math.floor(i / H.buckets), v]);
    });
    if (!data.length) { box.appendChild(note('No rank windows in this range.')); return; }
    // Colours from the typical cell (the median) up to the largest, at least 1.5 × typical: a
    // quiet communicator stays pale, and one slow rank stands out of it.
    var values = data.map(function (c) { return c[2]; }).sort(function (a, b) { return a - b; });
    var typical = values[Math.floor(values.length / 2)];
    var max = Math.max(values[values.length - 1], 1.5 * typical);
    chart(box, 'p99-by-rank:' + d.key, 320, {
      tooltip: { formatter: function (p) { return 'rank ' + H.rows[p.value[1]] + '<br>' + fmtTime(BUCKETS[p.value[0]]) + ': p99 ' + fmtUs(p.value[2]); } },
      grid: { left: 60, right: 70, top: 10, bottom: 30 },
      xAxis: bucketAxis(),
      yAxis: { type: 'category', data: H.rows, inverse: true, name: 'rank', nameLocation: 'start' },
      visualMap: heatMap(max, 'µs', typical),
      series: [{ type: 'heatmap', data: data, progressive: 0 }]
    });
  }

  function culpritTimeline(parent, d) {
    var C = d.culprits;
    var box = el('div');
    parent.appendChild(box);
    box.appendChild(el('h3', { text: 'Culprit timeline' }));
    box.appendChild(note('What the attribution blamed, per ' + fmtDuration(R.bucketMs) + ': larger dots, more windows; shaded: alerts firing.'));
    if (!C.points.length) { box.appendChild(note('No findings in this range: every window was NONE.')); return; }
    var maxN = 1;
    C.points.forEach(function (p) { maxN = Math.max(maxN, p[2]); });
    var series = C.kinds.map(function (k, ki) {
      return { name: k, type: 'scatter', itemStyle: { color: KIND_COLORS[k] },
        symbolSize: function (v) { return 4 + 12 * Math.sqrt(v[2] / maxN); },
        data: C.points.filter(function (p) { return p[4] === ki; }).map(function (p) { return [p[0], p[1], p[2], p[3]]; }) };
    }).filter(function (s) { return s.data.length; });
    series.push({ name: 'alerts', type: 'scatter', data: [], markArea: { silent: true, data: alertAreas(d.alerts), label: { show: false } } });
    chart(box, 'culprits:' + d.key, Math.max(220, 90 + 22 * C.labels.length), {
      tooltip: { formatter: function (p) { return C.labels[p.value[1]] + ' (' + (C.causes[p.value[1]] || '') + ')<br>' + fmtTime(p.value[0]) + ': ' + p.value[2] + ' windows, excess up to ' + fmtUs(p.value[3]); } },
      legend: { top: 0, data: series.map(function (s) { return s.name; }).filter(function (n) { return n !== 'alerts'; }) },
      grid: { left: 110, right: 20, top: 34, bottom: 30 },
      xAxis: timeAxis(),
      yAxis: { type: 'category', data: C.labels, inverse: true },
      series: series
    });
  }

  function phaseChart(parent, d) {
    var P = d.phases;
    var box = el('div');
    parent.appendChild(box);
    box.appendChild(el('h3', { text: 'Phase breakdown per rank' }));
    box.appendChild(note('Mean µs per collective in each phase over the range, weighted by calls' + (P.block > 1 ? ', ' + P.block + ' ranks per bar' : '') +
      '. A straggler waits least; its own phases say why (guard: ring full, publish: slow publish, copy/reduce: memory).'));
    var names = Object.keys(P.phaseUs);
    var series = names.map(function (n, i) { return { name: n, type: 'bar', stack: 'phases', data: P.phaseUs[n], itemStyle: { color: PHASE_COLORS[i % PHASE_COLORS.length] }, large: P.ranks.length > 256 }; });
    chart(box, 'phases:' + d.key, 320, {
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: function (v) { return fmtUs(v); } },
      legend: { top: 0 },
      grid: { left: 60, right: 20, top: 34, bottom: P.ranks.length > 64 ? 60 : 30 },
      xAxis: { type: 'category', data: P.ranks, name: 'rank' },
      yAxis: { type: 'value', name: 'µs' },
      dataZoom: P.ranks.length > 64 ? [{ type: 'inside' }, { type: 'slider', height: 18, bottom: 8 }] : [],
      series: series
    });
  }

  function delayMatrix(parent, d) {
    var M = d.matrices;
    var box = el('div');
    parent.appendChild(box);
    box.appendChild(el('h3', { text: 'Delay matrix' }));
    if (!M.length) { box.appendChild(note('No attributed window in this range.')); return; }
    box.appendChild(note('Row: waiting rank r; column: peer p; cell: mean µs per collective that p was late as r saw it (L[r][p]). ' +
      'A high column is a slow rank; one high cell, a slow link. The windows with the largest findings:'));
    var select = el('select', { 'aria-label': 'window' });
    M.forEach(function (m, i) {
      select.appendChild(el('option', { value: String(i), text: fmtTime(m.windowStartMs) + ' ' + m.verdict + (m.findings ? ' ' + m.findings : '') }));
    });
    box.appendChild(select);
    var info = note('');
    box.appendChild(info);
    function cells(m) {
      var out = [];
      m.values.forEach(function (v, i) { if (v != null) out.push([i % m.size, Math.floor(i / m.size), v]); });
      return out;
    }
    function option(m) {
      var labels = [];
      for (var i = 0; i < m.size; i++) labels.push(m.block > 1 ? (i * m.block) + '–' + Math.min(d.worldSize - 1, (i + 1) * m.block - 1) : String(i));
      info.textContent = (m.unit === 'lateness' ? 'Lateness' : 'Per-peer wait (emitter without lateness counters)') +
        (m.block > 1 ? ', ' + m.block + ' ranks per row and column (their largest cell)' : '') + '; largest cell ' + fmtUs(m.maxUs) + '.';
      return {
        tooltip: { formatter: function (p) { return 'rank ' + labels[p.value[1]] + ' waiting on ' + labels[p.value[0]] + ': ' + fmtUs(p.value[2]); } },
        grid: { left: 60, right: 80, top: 10, bottom: 50 },
        xAxis: { type: 'category', data: labels, name: 'peer', nameLocation: 'middle', nameGap: 30 },
        yAxis: { type: 'category', data: labels, inverse: true, name: 'waiting rank', nameLocation: 'start' },
        visualMap: heatMap(m.maxUs, 'µs'),
        series: [{ type: 'heatmap', data: cells(m), progressive: 0 }]
      };
    }
    var c = chart(box, 'delay-matrix:' + d.key, 380, option(M[0]));
    select.addEventListener('change', function () {
      var o = option(M[Number(select.value)]);
      o.animation = false;
      c.setOption(o, { replaceMerge: ['series'] });
    });
  }

  function detail(d) {
    var sec = el('section', { class: 'comm', id: anchor(d.key) });
    root.appendChild(sec);
    var firing = d.alerts.filter(function (a) { return a.endMs == null; }).length;
    sec.appendChild(el('h2', null, [d.key + ' ', el('span', { class: 'badge', text: d.worldSize + ' ranks' }), ' ',
      el('span', { class: 'badge' + (firing ? ' firing' : ''), text: d.alerts.length + ' alerts' + (firing ? ', ' + firing + ' firing' : '') })]));
    latencyChart(sec, d);
    var g1 = el('div', { class: 'grid2' });
    sec.appendChild(g1);
    culpritTimeline(g1, d);
    p99Heatmap(g1, d);
    var g2 = el('div', { class: 'grid2' });
    sec.appendChild(g2);
    delayMatrix(g2, d);
    phaseChart(g2, d);
  }

  header();
  summary();
  overview();
  alertsTable();
  if (R.details.length) root.appendChild(el('h2', { text: 'Details' }));
  R.details.forEach(detail);
  document.body.setAttribute('data-charts', String(charts.length));
  // The page's full height, for a screenshot of all of it.
  document.body.setAttribute('data-height', String(document.documentElement.scrollHeight));
  document.body.setAttribute('data-report-ready', 'true');
})();
