// tracelane_report.html: draws the sweep report from the JSON data element above this
// script (compiled into tracelane; see src/cli/report_html.cpp). Every text from the report
// goes into the page through textContent or setAttribute, never as markup. Iteration
// sections are filled when they come near the screen (all of them with ?all in the URL),
// so that a sweep of thousands of iterations opens at once.
(function () {
  'use strict';
  const scriptStart = performance.now();  // the HTML (data included) is parsed by now
  const errorBox = document.getElementById('js-errors');
  // Any script error is shown on the page (and read by the browser test).
  function showError(message) {
    errorBox.hidden = false;
    const line = document.createElement('p');
    line.textContent = 'page error: ' + message;
    errorBox.appendChild(line);
    document.body.setAttribute('data-js-error', '1');
  }
  window.addEventListener('error', function (event) {
    showError(event.message + ' (line ' + event.lineno + ')');
  });

  // The same colours as `--preview`'s SVG (src/timeline_svg.cpp): the built-in groups.
  const COLOURS = {
    compute: '#4e79a7', nccl_all_gather: '#f28e2b', nccl_reduce_scatter: '#e15759',
    nccl_all_reduce: '#b07aa1', nccl_other: '#9c755f', memcpy: '#59a14f', memset: '#76b7b2',
    sync: '#8c8c8c', symmetric_memory_barrier: '#edc948'
  };
  const EXTRA_COLOURS = ['#00838f', '#9e9d24', '#4e342e', '#ad1457', '#283593', '#558b2f'];

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    if (attributes) {
      for (const key of Object.keys(attributes)) {
        const value = attributes[key];
        if (value === null || value === undefined) continue;
        if (key === 'class') node.className = value;
        else node.setAttribute(key, String(value));
      }
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function group3(digits) { return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  // A number as the report has it, digits grouped; reals with `decimals` digits when given.
  function num(value, decimals) {
    if (value === null || value === undefined) return '';
    let text = decimals === undefined ? String(value) : value.toFixed(decimals);
    if (text.indexOf('e') >= 0) return text;
    const point = text.indexOf('.');
    return point < 0 ? group3(text) : group3(text.slice(0, point)) + text.slice(point);
  }
  function bytes(value) {
    if (value === null || value === undefined) return '';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let unit = 0, scaled = value;
    while (scaled >= 1024 && unit < units.length - 1) { scaled /= 1024; unit++; }
    return (unit ? scaled.toFixed(1) : String(scaled)) + ' ' + units[unit];
  }
  function percent(fraction) { return (fraction * 100).toFixed(2) + '%'; }
  function colour(group, extra) {
    if (COLOURS[group]) return COLOURS[group];
    if (group.indexOf('nccl') === 0) return COLOURS.nccl_other;
    let hash = 0;
    for (let i = 0; i < group.length; i++) hash = (hash * 31 + group.charCodeAt(i)) >>> 0;
    return extra[hash % extra.length];
  }
  function median(values) {
    const sorted = values.slice().sort(function (a, b) { return a - b; });
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }
  function statusBadge(status) {
    return el('span', { class: 'status st-' + (status || 'none') }, status || '?');
  }

  const data = JSON.parse(document.getElementById('tracelane-data').textContent);
  const columns = data.columns;
  const groupNames = data.groups || [], links = data.links || {};
  const rows = data.rows.map(function (cells, index) {
    const row = { index: index, x: cells[cells.length - 1] || {} };
    for (let c = 0; c < columns.length; c++) row[columns[c]] = cells[c];
    // Lane groups come as indexes into data.groups; links as the directory's and the name.
    if (row.x.gpu_busy) {
      const busy = {};
      for (const pair of row.x.gpu_busy) busy[groupNames[pair[0]]] = pair[1];
      row.x.gpu_busy = busy;
    }
    if (row.output !== null && !row.x.no_link && Object.prototype.hasOwnProperty.call(links, row.dir))
      row.x.href = links[row.dir] + '/' + (row.x.output_href || row.output);
    return row;
  });

  // Iterations (file and merge rows of one directory, in report order) and runs.
  const iterations = [], byDir = new Map(), problemRows = [];
  for (const row of rows) {
    if (row.kind === 'problem') { problemRows.push(row); continue; }
    let iteration = byDir.get(row.dir);
    if (!iteration) {
      iteration = { id: 'it-' + iterations.length, dir: row.dir, run: row.run, name: row.iteration, files: [], merge: null };
      byDir.set(row.dir, iteration);
      iterations.push(iteration);
    }
    if (row.kind === 'merge') iteration.merge = row; else iteration.files.push(row);
  }
  function ppOrder(a, b) {
    const pa = a.pp_rank === null ? Infinity : a.pp_rank, pb = b.pp_rank === null ? Infinity : b.pp_rank;
    return pa !== pb ? pa - pb : (a.rank === null ? 0 : a.rank) - (b.rank === null ? 0 : b.rank);
  }
  for (const iteration of iterations) iteration.files.sort(ppOrder);
  const runs = [], byRun = new Map();
  for (const iteration of iterations) {
    const name = iteration.run === null ? iteration.dir : iteration.run;
    let run = byRun.get(name);
    if (!run) { run = { name: name, iterations: [] }; byRun.set(name, run); runs.push(run); }
    run.iterations.push(iteration);
  }

  const page = document.getElementById('page');
  page.textContent = '';
  const totals = data.totals || {};
  page.appendChild(el('h1', null, 'tracelane sweep report'));
  page.appendChild(el('p', { class: 'where' }, data.root));
  page.appendChild(el('p', { class: 'muted' },
    num(totals.files) + ' files, ' + num(totals.merges) + ' merges, ' + runs.length + ' runs, ' +
    iterations.length + ' iterations · ' + (data.tool || 'tracelane') +
    (data.shard ? ' · shard ' + data.shard.index + '/' + data.shard.count : '')));
  page.appendChild(el('nav', null, el('a', { href: '#wrong' }, 'What went wrong'), el('a', { href: '#runs' }, 'Runs'),
    el('a', { href: '#iterations' }, 'Iterations'), el('a', { href: '#totals' }, 'Totals and charts')));

  // 1. What went wrong, first.
  function where(row) {
    if (row.kind === 'file') return row.dir + '/' + row.file;
    return row.dir;
  }
  const wrong = el('section', { id: 'wrong' }, el('h2', null, 'What went wrong'));
  page.appendChild(wrong);
  const LIST_LIMIT = 1000;
  function problemList(title, className, items) {
    if (!items.length) return 0;
    wrong.appendChild(el('h3', null, title + ' (' + items.length + ')'));
    const list = el('ul', { class: 'problems', id: 'list-' + className });
    for (const item of items.slice(0, LIST_LIMIT)) {
      const li = el('li', { class: className });
      const iteration = item.row && item.row.kind !== 'problem' ? byDir.get(item.row.dir) : null;
      li.appendChild(iteration ? el('a', { class: 'where', href: '#' + iteration.id }, item.where) : el('span', { class: 'where' }, item.where));
      li.appendChild(document.createTextNode(': ' + item.reason));
      list.appendChild(li);
    }
    if (items.length > LIST_LIMIT) list.appendChild(el('li', null, '... and ' + (items.length - LIST_LIMIT) + ' more (see tracelane_report.json)'));
    wrong.appendChild(list);
    return items.length;
  }
  const failed = [], warnings = [], missing = [], unmatched = [];
  for (const row of rows) {
    if (row.status === 'failed') {
      const item = { row: row, where: where(row), reason: row.error || 'failed' };
      if (row.kind === 'problem' && /^missing shards: /.test(row.error || '')) missing.push(item); else failed.push(item);
    } else if (row.status === 'warning') {
      warnings.push({ row: row, where: where(row), reason: row.error || 'warning' });
    }
    if (row.kind === 'merge' && row.pp_send_recv_unmatched > 0)
      unmatched.push({ row: row, where: row.dir, reason: row.pp_send_recv_unmatched + ' PP send/recv unmatched (a truncated capture window?)' });
  }
  for (const note of data.notes || []) warnings.push({ row: null, where: 'report', reason: note });
  let wrongCount = 0;
  wrongCount += problemList('Failed', 'failed', failed);
  wrongCount += problemList('Missing shards', 'missing', missing);
  wrongCount += problemList('Warnings', 'warning', warnings);
  wrongCount += problemList('Iterations with unmatched send/recv', 'unmatched', unmatched);
  if (!wrongCount)
    wrong.appendChild(el('p', { class: 'allgood', id: 'nothing-wrong' }, 'Nothing went wrong: ' + num(totals.files) + ' files and ' +
      num(totals.merges) + ' merges, none failed, no warnings, no unmatched send/recv.'));

  // 2. One picture per run: iterations across, ranks in PP order down.
  const runsSection = el('section', { id: 'runs' }, el('h2', null, 'Runs'));
  page.appendChild(runsSection);
  runsSection.appendChild(el('p', { class: 'legend' },
    el('span', null, el('i', { class: 'st-ok' }), 'ok'), el('span', null, el('i', { class: 'st-skipped' }), 'skipped (up to date)'),
    el('span', null, el('i', { class: 'st-failed' }), 'failed'),
    el('span', { class: 'muted' }, 'cells show the compaction ratio (original streams / lanes); the last row is the merge')));
  for (const run of runs) {
    const ranks = new Map();
    for (const iteration of run.iterations)
      for (const file of iteration.files) {
        const key = file.rank === null ? 'file ' + file.file : 'rank ' + file.rank;
        if (!ranks.has(key)) ranks.set(key, { key: key, rank: file.rank, pp_rank: file.pp_rank });
        else if (file.pp_rank !== null) ranks.get(key).pp_rank = file.pp_rank;
      }
    const rankList = Array.from(ranks.values()).sort(ppOrder);
    const head = el('tr', null, el('th', { class: 'rank' }, 'iteration'));
    for (const iteration of run.iterations) {
      const match = /(\d+)$/.exec(iteration.name || '');
      head.appendChild(el('th', { title: iteration.dir }, match ? match[1] : (iteration.name || iteration.dir)));
    }
    const body = el('tbody');
    for (const rank of rankList) {
      const tr = el('tr', null, el('th', { class: 'rank' }, rank.key + (rank.pp_rank === null ? '' : ' · pp ' + rank.pp_rank)));
      for (const iteration of run.iterations) {
        const file = iteration.files.find(function (f) {
          return (f.rank === null ? 'file ' + f.file : 'rank ' + f.rank) === rank.key;
        });
        if (!file) { tr.appendChild(el('td', { class: 'st-none' })); continue; }
        const ratio = file.compaction_ratio;
        tr.appendChild(el('td', null, el('a', {
          class: 'cell st-' + file.status, href: '#' + iteration.id, 'data-row': file.index,
          title: where(file) + ': ' + file.status + (ratio === null ? '' : ', compaction ratio ' + ratio)
        }, ratio === null ? (file.status === 'failed' ? '✗' : '·') : ratio.toFixed(1))));
      }
      body.appendChild(tr);
    }
    if (run.iterations.some(function (i) { return i.merge; })) {
      const tr = el('tr', null, el('th', { class: 'rank' }, 'merge'));
      for (const iteration of run.iterations) {
        const merge = iteration.merge;
        if (!merge) { tr.appendChild(el('td', { class: 'st-none' })); continue; }
        const lost = merge.pp_send_recv_unmatched > 0;
        tr.appendChild(el('td', null, el('a', {
          class: 'cell st-' + (lost && merge.status === 'ok' ? 'warning' : merge.status), href: '#' + iteration.id, 'data-row': merge.index,
          title: merge.dir + ': merge ' + merge.status + (lost ? ', ' + merge.pp_send_recv_unmatched + ' send/recv unmatched' : '')
        }, merge.status === 'failed' ? '✗' : lost ? '!' + merge.pp_send_recv_unmatched : '✓')));
      }
      body.appendChild(tr);
    }
    runsSection.appendChild(el('h3', null, run.name + ' ', el('span', { class: 'muted' },
      '(' + run.iterations.length + ' iterations, ' + rankList.length + ' ranks)')));
    runsSection.appendChild(el('div', { class: 'gridwrap' }, el('table', { class: 'grid', 'data-run': run.name }, el('thead', null, head), body)));
  }

  // 3. Per iteration: the timeline picture, the numbers, the links.
  const iterationsSection = el('section', { id: 'iterations' }, el('h2', null, 'Iterations'));
  page.appendChild(iterationsSection);
  const FILE_COLUMNS = [
    ['rank', 'rank', 'int'], ['pp_rank', 'PP rank', 'int'], ['file', 'file', 'text'], ['output', 'compacted', 'link'],
    ['status', 'status', 'status'], ['events', 'events', 'int'], ['measured_slices', 'GPU slices', 'int'],
    ['original_streams', 'streams', 'int'], ['compacted_lanes', 'lanes', 'int'], ['compaction_ratio', 'ratio', 'ratio'],
    ['gpu_window_us', 'GPU window (µs)', 'window'], ['gpu_busy', 'GPU busy', 'busy'], ['bubble_fraction', 'bubble', 'bubble'],
    ['input_bytes', 'bytes in', 'int'], ['output_bytes', 'bytes out', 'int'], ['seconds', 'seconds', 'real'], ['error', 'error', 'error']
  ];
  const STRIP_HEIGHT = 10, RANK_GAP = 4, LABEL_WIDTH = 190;
  let timelineWidth = 0;

  function stripsOf(iteration) {
    const merged = iteration.merge && iteration.merge.x.timeline;
    if (merged) return { common: true, start: merged.start_us, end: merged.end_us, strips: merged.strips.map(function (s) {
      return { rank: s[0], pp_rank: s[1], group: groupNames[s[2]], occupancy: s[3], start: merged.start_us, end: merged.end_us };
    }) };
    const strips = [];
    for (const file of iteration.files) {
      const timeline = file.x.timeline;
      if (!timeline) continue;
      for (const s of timeline.strips)
        strips.push({ rank: s[0] === null ? file.rank : s[0], pp_rank: s[1] === null ? file.pp_rank : s[1], group: groupNames[s[2]],
          occupancy: s[3], start: timeline.start_us, end: timeline.end_us });
    }
    return strips.length ? { common: false, strips: strips } : null;
  }

  function drawTimeline(picture, canvas) {
    const strips = picture.strips;
    let height = 0, previous;
    const tops = strips.map(function (s) {
      const key = s.rank + '/' + s.pp_rank;
      if (previous !== undefined && key !== previous) height += RANK_GAP;
      previous = key;
      const top = height;
      height += STRIP_HEIGHT;
      return top;
    });
    // One width for all (read once: reading layout per section would lay out the page each time).
    if (!timelineWidth) timelineWidth = Math.max(400, Math.min(1300, (iterationsSection.clientWidth || 1100) - 30));
    const width = timelineWidth;
    const axis = 16, scale = window.devicePixelRatio || 1;
    canvas.width = width * scale;
    canvas.height = (height + axis) * scale;
    canvas.style.width = width + 'px';
    canvas.style.height = (height + axis) + 'px';
    const g = canvas.getContext('2d');
    g.scale(scale, scale);
    g.font = '10px ui-monospace, "DejaVu Sans Mono", monospace';
    g.textBaseline = 'middle';
    const plot = width - LABEL_WIDTH;
    const keys = [];
    let lastRank;
    strips.forEach(function (s, i) {
      const top = tops[i], bins = s.occupancy.length, binWidth = plot / bins;
      const rankLabel = (s.rank === null ? '?' : 'r' + s.rank) + (s.pp_rank === null ? '' : ' pp' + s.pp_rank);
      g.fillStyle = '#333';
      const label = (rankLabel !== lastRank ? rankLabel : '') + '  ' + s.group;
      lastRank = rankLabel;
      g.fillText(label.length > 30 ? label.slice(0, 29) + '…' : label, 2, top + STRIP_HEIGHT / 2);
      g.fillStyle = '#eeeeee';
      g.fillRect(LABEL_WIDTH, top, plot, STRIP_HEIGHT - 1);
      g.fillStyle = colour(s.group, EXTRA_COLOURS);
      for (let b = 0; b < bins; b++) {
        const level = s.occupancy.charCodeAt(b) - 48;
        if (level <= 0) continue;
        g.globalAlpha = level / 9;
        g.fillRect(LABEL_WIDTH + b * binWidth, top, Math.ceil(binWidth), STRIP_HEIGHT - 1);
      }
      g.globalAlpha = 1;
      keys.push([s.rank, s.group]);
    });
    g.fillStyle = '#666';
    g.fillRect(LABEL_WIDTH, height + 1, plot, 1);
    g.textBaseline = 'top';
    if (picture.common) {
      const span = (picture.end - picture.start) / 1000;
      g.fillText('0 ms', LABEL_WIDTH, height + 4);
      const endText = num(span, 3) + ' ms (merged clock)';
      g.fillText(endText, width - g.measureText(endText).width - 2, height + 4);
    } else {
      g.fillText('each rank over its own GPU window (no merge timeline)', LABEL_WIDTH, height + 4);
    }
    canvas.setAttribute('data-strips', String(strips.length));
    canvas.setAttribute('data-keys', JSON.stringify(keys));
  }

  function cell(row, column, iteration) {
    const name = column[0], type = column[2], value = row[name];
    const td = el('td', { 'data-col': name });
    if (type === 'text') { td.className = 'text'; td.textContent = value === null ? '' : value; }
    else if (type === 'link') {
      td.className = 'text';
      if (value !== null && row.x.href && row.status !== 'failed') td.appendChild(el('a', { href: row.x.href }, value));
      else if (value !== null) td.textContent = value;
    } else if (type === 'status') td.appendChild(statusBadge(value));
    else if (type === 'int') td.textContent = num(value);
    else if (type === 'ratio') td.textContent = value === null ? '' : num(value, 4);
    else if (type === 'real') td.textContent = value === null ? '' : num(value, 3);
    else if (type === 'window') td.textContent = row.x.gpu_window_us === undefined ? '' : num(row.x.gpu_window_us);
    else if (type === 'busy') {
      const busy = row.x.gpu_busy || {};
      for (const group of Object.keys(busy).sort())
        td.appendChild(el('span', { class: 'busy', 'data-group': group, title: group }, group + ' ' + percent(busy[group])));
    } else if (type === 'bubble') {
      const bubble = iteration.merge && iteration.merge.x.bubble_fraction;
      if (bubble && row.rank !== null && bubble[String(row.rank)] !== undefined) td.textContent = percent(bubble[String(row.rank)]);
    } else if (type === 'error') { td.className = 'error'; td.textContent = value === null ? '' : value; }
    return td;
  }

  function fact(list, label, value, name) {
    if (value === null || value === undefined || value === '') return;
    list.appendChild(el('dt', null, label));
    list.appendChild(el('dd', name ? { 'data-col': name } : null, value));
  }

  function fillIteration(iteration) {
    if (iteration.filled) return;
    iteration.filled = true;
    const section = iteration.node;
    section.style.minHeight = '';
    const merge = iteration.merge;
    const facts = el('dl', { class: 'facts' });
    if (merge) {
      const row = el('div', { 'data-row': merge.index, class: 'merge' });
      fact(facts, 'merge', statusBadge(merge.status), 'status');
      if (merge.output !== null && merge.x.href && merge.status !== 'failed')
        fact(facts, 'merged trace', el('a', { href: merge.x.href }, merge.output), 'output');
      fact(facts, 'ranks', num(merge.ranks), 'ranks');
      fact(facts, 'PP order', merge.pp_order === null ? null : merge.pp_order + ' (' + merge.pp_order_source + ')', 'pp_order');
      fact(facts, 'time alignment', merge.time_alignment, 'time_alignment');
      if (merge.x.gpu_window_us !== undefined) fact(facts, 'GPU window (µs)', num(merge.x.gpu_window_us), 'gpu_window_us');
      if (merge.pp_send_recv_pairs !== null) {
        fact(facts, 'PP send/recv pairs', num(merge.pp_send_recv_pairs), 'pp_send_recv_pairs');
        fact(facts, 'PP send/recv unmatched', num(merge.pp_send_recv_unmatched), 'pp_send_recv_unmatched');
        fact(facts, 'PP compute dependencies', num(merge.pp_compute_dependency_pairs), 'pp_compute_dependency_pairs');
        fact(facts, 'PP compute dependencies unmatched', num(merge.pp_compute_dependency_unmatched), 'pp_compute_dependency_unmatched');
      }
      fact(facts, 'bytes in', num(merge.input_bytes), 'input_bytes');
      fact(facts, 'bytes out', num(merge.output_bytes), 'output_bytes');
      fact(facts, 'seconds', merge.seconds === null ? null : num(merge.seconds, 3), 'seconds');
      fact(facts, 'error', merge.error, 'error');
      row.appendChild(facts);
      section.appendChild(row);
    }
    const picture = stripsOf(iteration);
    if (picture) {
      const figure = el('figure', { class: 'timeline', style: 'margin:0' });
      const canvas = el('canvas', { class: 'timeline', 'data-source': picture.common ? 'merge' : 'files' });
      figure.appendChild(canvas);
      const groups = Array.from(new Set(picture.strips.map(function (s) { return s.group; }))).sort();
      figure.appendChild(el('figcaption', { class: 'legend' }, ...groups.map(function (group) {
        return el('span', null, el('i', { style: 'background:' + colour(group, EXTRA_COLOURS) }), group);
      }), el('span', { class: 'muted' }, 'darker = busier; one strip per rank and lane group')));
      section.appendChild(figure);
      drawTimeline(picture, canvas);
    } else {
      section.appendChild(el('p', { class: 'note' }, 'No timeline in this report for this iteration (failed, skipped, or written by an older tracelane).'));
    }
    const table = el('table', { class: 'files' });
    table.appendChild(el('thead', null, el('tr', null, ...FILE_COLUMNS.map(function (column) { return el('th', null, column[1]); }))));
    const body = el('tbody');
    for (const file of iteration.files) {
      const tr = el('tr', { 'data-row': file.index });
      for (const column of FILE_COLUMNS) tr.appendChild(cell(file, column, iteration));
      body.appendChild(tr);
    }
    table.appendChild(body);
    section.appendChild(el('div', { class: 'gridwrap', style: 'border:0' }, table));
  }

  const fillAll = /(^|[?&])all(=|&|$)/.test(window.location.search);
  const observer = !fillAll && 'IntersectionObserver' in window ? new IntersectionObserver(function (entries) {
    for (const entry of entries)
      if (entry.isIntersecting) { observer.unobserve(entry.target); fillIteration(entry.target.iteration); }
  }, { rootMargin: '1500px 0px' }) : null;
  // A small sweep, and the top of a big one, is drawn at once: an observer's first callback
  // may come after a headless screenshot (or a printout) is taken.
  const EAGER = iterations.length <= 50 ? iterations.length : 10;
  for (const [position, iteration] of iterations.entries()) {
    const section = el('section', { class: 'iter', id: iteration.id, 'data-dir': iteration.dir },
      el('h3', null, iteration.dir));
    iteration.node = section;
    section.iteration = iteration;
    let strips = 0;
    if (iteration.merge && iteration.merge.x.timeline) strips = iteration.merge.x.timeline.strips.length;
    else for (const file of iteration.files) strips += file.x.timeline ? file.x.timeline.strips.length : 0;
    section.style.minHeight = (140 + strips * (STRIP_HEIGHT + 1) + iteration.files.length * 22) + 'px';
    iterationsSection.appendChild(section);
    if (observer && position >= EAGER) observer.observe(section); else fillIteration(iteration);
  }
  function showTarget() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const iteration = iterations.find(function (i) { return i.id === id; });
    if (iteration && !iteration.filled) { fillIteration(iteration); iteration.node.scrollIntoView(); }
  }
  window.addEventListener('hashchange', showTarget);

  // 4. Totals and charts.
  const totalsSection = el('section', { id: 'totals' }, el('h2', null, 'Totals and charts'));
  page.appendChild(totalsSection);
  function strip(values, low, high, logScale, mark) {
    const canvas = el('canvas', { class: 'dist', width: 220, height: 16, 'data-points': values.length });
    const g = canvas.getContext('2d');
    const x = function (v) {
      const t = logScale ? (Math.log(v) - Math.log(low)) / (Math.log(high) - Math.log(low) || 1) : (v - low) / ((high - low) || 1);
      return 4 + Math.max(0, Math.min(1, t)) * 212;
    };
    g.fillStyle = '#ddd';
    g.fillRect(4, 8, 212, 1);
    g.fillStyle = 'rgba(21,101,192,0.35)';
    for (const v of values) g.fillRect(x(v) - 1, 3, 3, 10);
    if (values.length) { g.fillStyle = '#c62828'; g.fillRect(x(mark) - 1, 0, 2, 16); }
    return canvas;
  }
  const runTable = el('table', { class: 'runs' });
  runTable.appendChild(el('thead', null, el('tr', null, ...['run', 'iterations', 'files ok', 'failed', 'bytes in', 'bytes out',
    'compaction ratio: median (min – max)', '', 'compute busy: median (min – max)', '', 'seconds'].map(function (h) { return el('th', null, h); }))));
  const runBody = el('tbody');
  const allRatios = rows.filter(function (r) { return r.kind === 'file' && r.compaction_ratio !== null && r.compaction_ratio > 0; })
    .map(function (r) { return r.compaction_ratio; });
  const ratioLow = allRatios.length ? Math.min.apply(null, allRatios) : 1, ratioHigh = allRatios.length ? Math.max.apply(null, allRatios) : 1;
  for (const run of runs) {
    const files = [];
    for (const iteration of run.iterations) files.push(...iteration.files);
    const ratios = files.filter(function (f) { return f.compaction_ratio !== null && f.compaction_ratio > 0; }).map(function (f) { return f.compaction_ratio; });
    const busy = files.filter(function (f) { return f.x.gpu_busy && f.x.gpu_busy.compute !== undefined; }).map(function (f) { return f.x.gpu_busy.compute; });
    const sum = function (name) { return files.reduce(function (s, f) { return s + (f[name] || 0); }, 0); };
    const seconds = files.reduce(function (s, f) { return s + (f.seconds || 0); }, 0) +
      run.iterations.reduce(function (s, i) { return s + (i.merge && i.merge.seconds || 0); }, 0);
    const describe = function (values, show) {
      return values.length ? show(median(values)) + ' (' + show(Math.min.apply(null, values)) + ' – ' + show(Math.max.apply(null, values)) + ')' : '–';
    };
    runBody.appendChild(el('tr', { 'data-run': run.name },
      el('td', { class: 'text' }, run.name), el('td', null, run.iterations.length),
      el('td', null, files.filter(function (f) { return f.status === 'ok'; }).length),
      el('td', null, files.filter(function (f) { return f.status === 'failed'; }).length),
      el('td', { title: num(sum('input_bytes')) }, bytes(sum('input_bytes'))), el('td', { title: num(sum('output_bytes')) }, bytes(sum('output_bytes'))),
      el('td', null, describe(ratios, function (v) { return v.toFixed(2); })),
      el('td', null, strip(ratios, ratioLow, ratioHigh, ratioLow > 0 && ratioHigh > ratioLow, ratios.length ? median(ratios) : 0)),
      el('td', null, describe(busy, percent)),
      el('td', null, strip(busy, 0, 1, false, busy.length ? median(busy) : 0)),
      el('td', null, seconds.toFixed(3))));
  }
  runTable.appendChild(runBody);
  totalsSection.appendChild(el('h3', null, 'Per run'));
  totalsSection.appendChild(el('p', { class: 'note' }, 'Dots: one file each (ratio on a log scale from ' + ratioLow.toFixed(2) + ' to ' +
    ratioHigh.toFixed(2) + '; busy from 0 to 100%); red: the median. Seconds: compaction and merge time, summed.'));
  totalsSection.appendChild(el('div', { class: 'gridwrap', style: 'border:0' }, runTable));
  totalsSection.appendChild(el('h3', null, 'Report totals'));
  const totalsTable = el('table', { class: 'totals' });
  for (const key of Object.keys(totals)) {
    const value = totals[key];
    const shown = Array.isArray(value) ? value.join(' ') : typeof value === 'number' ? num(value) : value === null ? '' : String(value);
    totalsTable.appendChild(el('tr', null, el('th', null, key), el('td', { 'data-total': key }, shown)));
  }
  totalsSection.appendChild(totalsTable);
  if ((data.runs || []).length) {
    totalsSection.appendChild(el('h3', null, 'Sweep runs'));
    const sweepTable = el('table', { class: 'totals' });
    sweepTable.appendChild(el('tr', null, el('th', null, 'shard'), el('th', null, 'wall seconds'), el('th', null, 'jobs'), el('th', null, 'memory budget')));
    for (const run of data.runs)
      sweepTable.appendChild(el('tr', null, el('td', null, run.shard === null ? 'all' : run.shard), el('td', null, num(run.wall_seconds, 3)),
        el('td', null, run.jobs), el('td', null, bytes(run.memory_budget_bytes))));
    totalsSection.appendChild(sweepTable);
  }

  showTarget();
  page.setAttribute('data-state', 'ready');
  page.setAttribute('data-render-ms', String(Math.round(performance.now())));
  page.setAttribute('data-script-ms', String(Math.round(performance.now() - scriptStart)));
})();
