// The page script of `fast report` (tools/fast/report.hpp): draws the data inlined in
// <script id="fast-data"> with Chart.js, builds the sortable table and the settings. Each chart's
// figure gets data-series = the number of series drawn, and <body> gets data-rendered (charts
// drawn) and data-errors (script errors seen), which the page test reads.
(function () {
  'use strict';
  let errors = 0;
  const countError = () => { errors += 1; document.body.dataset.errors = String(errors); };
  window.addEventListener('error', countError);
  const consoleError = console.error.bind(console);
  console.error = (...args) => { countError(); consoleError(...args); };
  document.body.dataset.errors = '0';

  const data = JSON.parse(document.getElementById('fast-data').textContent);
  const runs = data.runs;
  // Thirty distinct colours (Tableau's ten, then darker and lighter sets whose hues and shades stay
  // apart from them), then hues a golden angle apart at three shades; the point marker changes every
  // ten runs as well (drawn in the page's legend too), so that close colours still differ.
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                   '#bcbd22', '#17becf', '#393b79', '#637939', '#8c6d31', '#843c39', '#7b4173', '#5254a3',
                   '#8ca252', '#bd9e39', '#ad494a', '#a55194', '#aec7e8', '#ff9896', '#98df8a', '#ffbb78',
                   '#c5b0d5', '#c49c94', '#f7b6d2', '#c7c7c7', '#dbdb8d', '#9edae5'];
  const colour = (i) => i < palette.length ? palette[i]
    : 'hsl(' + ((i * 137.508) % 360).toFixed(1) + ', 75%, ' + [30, 45, 60][i % 3] + '%)';
  const pointStyles = ['circle', 'rect', 'triangle', 'rectRot', 'crossRot', 'star'];
  const markerGlyphs = ['\u25cf', '\u25a0', '\u25b2', '\u25c6', '\u2715', '\u2605'];
  const markerOf = (i) => Math.floor(i / 10) % pointStyles.length;
  const pointStyle = (i) => pointStyles[markerOf(i)];
  // How the run ended, from its summary: '' (finished), or what sets it apart.
  function status(r) {
    const s = r.summary || {};
    if (!r.finished) return 'unfinished';
    const marks = [];
    if (s.diverged) marks.push('diverged');
    if (s.interrupted) marks.push('interrupted by ' + (s.interrupted_by || 'a signal') +
                                  (s.interrupted_at_step !== undefined ? ' at step ' + s.interrupted_at_step : ''));
    if (s.below_min_workers) marks.push('below min_workers at step ' + s.ended_at_step);
    return marks.join(', ');
  }
  const name = (r) => status(r) ? r.label + ' (' + status(r) + ')' : r.label;
  // Runs drawn dashed: those that did not run to their end.
  const dashed = (r) => status(r) !== '';
  let rendered = 0;

  function figure(parent, id, caption) {
    const fig = document.createElement('figure');
    fig.id = id;
    const box = document.createElement('div');
    box.className = 'chart';
    const canvas = document.createElement('canvas');
    box.appendChild(canvas);
    fig.appendChild(box);
    const cap = document.createElement('figcaption');
    cap.textContent = caption;
    fig.appendChild(cap);
    document.getElementById(parent).appendChild(fig);
    return { fig, canvas };
  }

  function draw(parent, id, caption, config) {
    const { fig, canvas } = figure(parent, id, caption);
    config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false }, config.options);
    // The runs' legend is the page's own (#legend): a chart's legend drops the entries it cannot fit.
    config.options.plugins = Object.assign({ legend: { display: false } }, config.options.plugins);
    const chart = new Chart(canvas, config);
    fig.dataset.series = String(chart.data.datasets.length);
    // Per series, the points with a value (a field the run's records lack gives none).
    fig.dataset.points = chart.data.datasets.map((d) => d.data.filter(
      (p) => p !== null && (typeof p !== 'object' || (p.y !== null && p.y !== undefined))).length).join(',');
    rendered += 1;
    return chart;
  }
  const perRun = [];  // the charts with one dataset per run, in the runs' order

  const axis = (title, extra) => Object.assign({ type: 'linear', title: { display: true, text: title } }, extra || {});

  // A line chart with one series per run; points(run) gives [x, y] pairs (y may be null).
  function lines(id, caption, xTitle, yTitle, points, yExtra) {
    perRun.push(draw('curves', id, caption, {
      type: 'line',
      data: {
        datasets: runs.map((r, i) => ({
          label: name(r), data: points(r).map(([x, y]) => ({ x, y })), borderColor: colour(i),
          backgroundColor: colour(i), pointRadius: i < 10 ? 2 : 3, pointStyle: pointStyle(i), borderWidth: 1.5, spanGaps: false,
          borderDash: dashed(r) ? [6, 3] : [],
        })),
      },
      options: { scales: { x: axis(xTitle), y: axis(yTitle, yExtra) } },
    }));
  }

  lines('accuracy-time', 'Test accuracy of the representative model against training time (evaluations).',
        'training time (s)', 'test accuracy', (r) => r.evals.map((e) => [e[0], e[2]]), { min: 0, max: 1 });
  lines('accuracy-samples', 'Test accuracy against training samples processed by all workers.',
        'samples', 'test accuracy', (r) => r.evals.map((e) => [e[1], e[2]]), { min: 0, max: 1 });
  lines('loss', 'Training loss (mean mini-batch cross-entropy of the workers) against samples.',
        'samples', 'training loss', (r) => r.loss.map((p) => [p[1], p[2]]));
  lines('bytes', 'Payload bytes sent by all workers, cumulative, against training time.',
        'training time (s)', 'bytes sent', (r) => r.bytes.map((p) => [p[0], p[1]]), { beginAtZero: true });
  lines('consensus', 'Consensus distance (1/W) sum ||x_i - xbar||^2 at each evaluation (0: identical replicas).',
        'training time (s)', 'consensus distance', (r) => r.evals.map((e) => [e[0], e[3]]), { beginAtZero: true });
  lines('staleness', 'Mean version lag of the applied gradients (0 for synchronous strategies).',
        'training time (s)', 'staleness (updates)', (r) => r.staleness.map((p) => [p[0], p[1]]),
        { beginAtZero: true });

  // The caption names the target when the runs that set one share it; else the table's column
  // gives each run's.
  const targets = [...new Set(runs.filter((r) => r.finished && r.summary.target_accuracy !== undefined)
    .map((r) => r.summary.target_accuracy))];
  const targetText = targets.length === 1 ? String(targets[0])
    : targets.length === 0 ? 'its target_accuracy (no run set one)'
      : 'its target_accuracy (see the table: the runs differ)';
  perRun.push(draw('curves', 'time-to-target',
       'Training time until the test accuracy first reached ' + targetText + ' (no bar: never reached).', {
    type: 'bar',
    data: {
      labels: ['time to target'],
      datasets: runs.map((r, i) => ({
        label: name(r), data: [r.summary ? r.summary.time_to_target_seconds : null], backgroundColor: colour(i),
      })),
    },
    options: { scales: { y: axis('seconds', { beginAtZero: true }) } },
  }));

  const maxWorkers = Math.max(1, ...runs.map((r) => r.idle.length));
  perRun.push(draw('workers', 'idle', 'Idle time per worker: time in the strategy\'s exchanges and the final wait.', {
    type: 'bar',
    data: {
      labels: Array.from({ length: maxWorkers }, (_, w) => 'worker ' + w),
      datasets: runs.map((r, i) => ({ label: name(r), data: r.idle, backgroundColor: colour(i) })),
    },
    options: { scales: { y: axis('seconds', { beginAtZero: true }) } },
  }));

  // The page's legend: every run with its colour, its full label and how it ended; a click hides or
  // shows the run in every chart drawn per run.
  const legend = document.getElementById('legend');
  runs.forEach((r, i) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch' + (dashed(r) ? ' dashed' : '');
    swatch.style.borderColor = colour(i);
    item.appendChild(swatch);
    const marker = document.createElement('span');
    marker.className = 'marker';
    marker.style.color = colour(i);
    marker.textContent = markerGlyphs[markerOf(i)];
    item.appendChild(marker);
    item.appendChild(document.createTextNode(name(r)));
    item.title = 'click (or Enter, Space) to hide or show this run';
    // A toggle button for the keyboard and screen readers too: aria-pressed is true while shown.
    item.tabIndex = 0;
    item.setAttribute('role', 'button');
    item.setAttribute('aria-pressed', 'true');
    const toggle = () => {
      const hidden = item.classList.toggle('hidden');
      item.setAttribute('aria-pressed', String(!hidden));
      perRun.forEach((chart) => { chart.setDatasetVisibility(i, !hidden); chart.update(); });
    };
    item.addEventListener('click', toggle);
    item.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' && e.key !== ' ') return;
      e.preventDefault();
      toggle();
    });
    legend.appendChild(item);
  });

  // Heat map of bytes per link, one chart per run: a square per (sender, receiver) pair.
  const workerTicks = { stepSize: 0.5, callback: (v) => (Number.isInteger(v) ? v : '') };
  runs.forEach((r, i) => {
    const w = r.workers;
    const links = r.links || [];
    const max = Math.max(1, ...links.map((l) => l.bytes));
    const heat = (v) => 'rgba(198, 40, 40, ' + (0.08 + 0.92 * v / max).toFixed(3) + ')';
    const caption = r.links === null  // not in the run's records (an empty list is a run that sent nothing)
      ? name(r) + ': bytes per link not recorded (' + (r.finished ? 'its summary has no bytes_per_link'
        : 'the run has no summary') + ').'
      : name(r) + ': bytes sent from a worker (x) to a worker (y), darker is more; max ' + max.toExponential(2) + ' bytes.';
    draw('links', 'links-' + i, caption, {
      type: 'scatter',
      data: {
        datasets: [{
          label: name(r), data: links.map((l) => ({ x: l.from, y: l.to, v: l.bytes })), pointStyle: 'rect',
          backgroundColor: (ctx) => ctx.raw ? heat(ctx.raw.v) : 'transparent', borderWidth: 0,
          pointRadius: (ctx) => {
            const a = ctx.chart.chartArea;
            return a ? Math.max(2, Math.min(a.width, a.height) / (2.2 * w)) : 4;
          },
        }],
      },
      options: {
        plugins: { legend: { display: false },
                   tooltip: { callbacks: { label: (c) => c.raw.x + ' -> ' + c.raw.y + ': ' + c.raw.v + ' bytes' } } },
        scales: { x: axis('from worker', { min: -0.5, max: w - 0.5, ticks: workerTicks }),
                  y: axis('to worker', { min: -0.5, max: w - 0.5, ticks: workerTicks, reverse: true }) },
      },
    });
  });

  // The table: one row per run, sortable by any column. A column's digits apply down to its
  // smallest shown value; a smaller non-zero value is written in exponent form (not as 0.0000).
  const columns = [
    ['run', (r) => r.label], ['strategy', (r) => r.summary.strategy ?? r.start.strategy],
    ['runtime', (r) => r.summary.runtime ?? r.start.runtime], ['workers', (r) => r.summary.workers ?? r.start.workers], ['final accuracy', (r) => r.summary.final_accuracy, 4],
    ['diverged', (r) => !r.finished ? '' : r.summary.diverged ? 'yes' : 'no'], ['ended', (r) => status(r) || 'finished'],
    ['target accuracy', (r) => r.summary.target_accuracy],
    ['time to target s', (r) => r.summary.time_to_target_seconds, 2], ['wall s', (r) => r.summary.wall_seconds, 1],
    ['bytes sent MB', (r) => r.summary.bytes_sent / 1e6, 1], ['staleness mean', (r) => r.summary.staleness_mean, 2],
    ['consensus distance', (r) => r.summary.consensus_distance, 4], ['epochs', (r) => r.summary.epochs, 2],
  ];
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  const body = table.createTBody();
  const text = (v, digits) => {
    if (v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v))) return '';
    if (typeof v !== 'number' || digits === undefined) return String(v);
    return v !== 0 && Math.abs(v) < 0.5 * Math.pow(10, -digits) ? v.toExponential(2) : v.toFixed(digits);
  };
  function fill(order) {
    body.innerHTML = '';
    order.forEach((r) => {
      const row = body.insertRow();
      if (r.summary.diverged) { row.className = 'diverged'; row.title = r.summary.divergence; }
      else if (dashed(r)) { row.className = 'ended-early'; row.title = status(r); }
      columns.forEach(([, get, digits]) => { row.insertCell().textContent = text(get(r), digits); });
    });
  }
  columns.forEach(([label, get], c) => {
    const th = document.createElement('th');
    th.textContent = label;
    th.addEventListener('click', () => {
      const descending = th.classList.contains('sorted-asc');
      head.querySelectorAll('th').forEach((h) => h.classList.remove('sorted-asc', 'sorted-desc'));
      th.classList.add(descending ? 'sorted-desc' : 'sorted-asc');
      const key = (r) => { const v = get(r); return v === null || v === undefined ? Infinity : v; };
      const sorted = runs.slice().sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      fill(descending ? sorted.reverse() : sorted);
    });
    head.appendChild(th);
  });
  fill(runs);
  document.getElementById('table').appendChild(table);

  runs.forEach((r) => {
    const details = document.createElement('details');
    const summary = document.createElement('summary');
    summary.textContent = name(r) + (r.summary && r.summary.diverged ? ': ' + r.summary.divergence : '');
    const pre = document.createElement('pre');
    pre.textContent = r.config;
    details.appendChild(summary);
    details.appendChild(pre);
    document.getElementById('settings').appendChild(details);
  });
  document.getElementById('title').textContent = data.title;
  const unfinished = runs.filter((r) => !r.finished).length;
  document.getElementById('subtitle').textContent = runs.length + ' run(s); ' + unfinished +
    ' without a summary (unfinished: still running, killed, or stopped before its end).';
  document.body.dataset.rendered = String(rendered);
}());
