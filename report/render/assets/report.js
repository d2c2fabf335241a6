// The script of a TorchScan report page (report/render/html_report.h): it
// draws the icicle charts from the page's JSON block, and makes the tables
// sortable, filterable and foldable, and the page searchable. Everything it
// shows is in the page already; it fetches nothing.
//
// A chart is {id, unit, scale, root}; a node is {name, path, type, value,
// status, mark?, children}. Values are exact decimal strings (counts pass
// 2^53); a bar is value / scale of the chart's width, so charts of one group
// share a scale.
'use strict';
(function () {
  const ROW_HEIGHT = 24;
  const GE = '\u2265 ';
  // Hues far apart in order, so that the few types of one model differ.
  const HUES = [210, 35, 130, 285, 0, 175, 55, 325, 95, 250, 15, 195];

  function grouped(digits) {
    return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  // As ScaledCount (html_text.h): "3.64 GFLOPs", "1.56 k parameters".
  function scaled(value, unit) {
    const join = /^[a-z]+$/.test(unit) ? ' ' : '';
    for (const [factor, prefix] of [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']]) {
      if (value >= factor) return (value / factor).toFixed(2) + ' ' + prefix + join + unit;
    }
    return value + ' ' + unit;
  }

  // NOTE [Colours]: one hue per module class, the same in every chart of
  // the page, given in the order the classes first appear (so a model's
  // first dozen classes all differ); a bar whose colour would repeat its
  // left neighbour's (two blocks of one class side by side) takes the
  // darker shade, so that siblings always separate.
  const hues = new Map();
  function hueOf(node) {
    const key = node.type || node.name;
    if (!hues.has(key)) hues.set(key, HUES[hues.size % HUES.length]);
    return hues.get(key);
  }
  function colour(node, neighbour) {
    const hue = hueOf(node);
    const light = 'hsl(' + hue + ', 62%, 83%)';
    return light === neighbour ? 'hsl(' + hue + ', 48%, 68%)' : light;
  }

  // The name a bar can be known by: the path's last part, with the parts
  // before it while it is a number ("layer1.0", not "0").
  function shortName(node) {
    if (!node.path) return node.name;
    const parts = node.path.split('.');
    let first = parts.length - 1;
    while (first > 0 && /^\d+$/.test(parts[first])) first--;
    return parts.slice(first).join('.');
  }

  // NOTE [Labels that fit]: a label is the first of (full path + value,
  // short name + value, full path, short name) that fits the bar, measured
  // in the bar's own font, else none: a cut label ("0...", "c...") says
  // nothing, the tooltip says everything.
  const ruler = document.createElement('canvas').getContext('2d');
  let barFont = null;
  function fitLabel(node, valueText, pixels) {
    if (barFont === null) {
      const probe = document.createElement('div');
      probe.className = 'bar';
      document.body.appendChild(probe);
      barFont = getComputedStyle(probe).font;
      probe.remove();
    }
    ruler.font = barFont;
    const full = node.path || node.name;
    const short = shortName(node);
    for (const text of [full + ' ' + valueText, short + ' ' + valueText, full, short]) {
      if (ruler.measureText(text).width + 10 <= pixels) return text;
    }
    return '';
  }

  // The search: lower-cased text, '' for none. "type:NAME" matches the
  // modules of exactly that class; other text, any path, class or operator
  // name that contains it.
  let query = '';
  function matches(path, type, operator) {
    if (query === '') return false;
    if (query.startsWith('type:')) {
      return type !== undefined && type.toLowerCase() === query.slice(5).trim();
    }
    return [path, type, operator].some((key) => key !== undefined && key.toLowerCase().includes(query));
  }
  function nodeMatches(node) {
    return matches(node.path || node.name, node.type || undefined, undefined);
  }

  function makeBar(state, node, left, width, depth, neighbour) {
    const chart = state.chart;
    const bar = document.createElement('div');
    const bound = node.status === 'complete' ? '' : GE;
    bar.className = 'bar ' + node.status + (node.mark ? ' mark-' + node.mark : '');
    if (query !== '') bar.classList.add(nodeMatches(node) ? 'hit' : 'dim');
    bar.style.left = left * 100 + '%';
    bar.style.width = width * 100 + '%';
    bar.style.top = depth * ROW_HEIGHT + 'px';
    bar.dataset.colour = colour(node, neighbour);
    bar.style.backgroundColor = bar.dataset.colour;
    const valueText = bound + scaled(Number(node.value), chart.unit);
    bar.textContent = fitLabel(node, valueText, width * state.container.clientWidth);
    const top = state.focus;
    const share = (100 * Number(node.value) / Number(top.value)).toFixed(1);
    bar.title = [
      (node.path || node.name) + (node.type ? ' (' + node.type + ')' : ''),
      bound + grouped(node.value) + ' ' + chart.unit +
        (node.status === 'complete' ? '' : ' (' + node.status + ': a lower bound)'),
      share + '% of ' + (top.path || top.name),
    ].concat(node.mark ? [node.mark + ' in this comparison'] : []).join('\n');
    bar.dataset.path = node.path;
    bar.dataset.value = node.value;
    bar.dataset.status = node.status;
    bar.dataset.type = node.type || '';
    bar.addEventListener('click', () => {
      // The top bar zooms out one level; any other zooms into itself.
      const trail = ancestors(state.chart.root, node);
      if (node !== state.focus) zoom(state, node);
      else if (trail.length) zoom(state, trail[trail.length - 1]);
    });
    // Linked highlighting: the same module in the other charts of the group.
    bar.addEventListener('mouseenter', () => link(state, node.path, true));
    bar.addEventListener('mouseleave', () => link(state, node.path, false));
    return bar;
  }

  function link(state, path, on) {
    const group = state.container.closest('.chart-group');
    for (const other of group.querySelectorAll('.icicle')) {
      if (other === state.container) continue;
      for (const bar of other.querySelectorAll('.bar')) {
        if (bar.dataset.path === path) bar.classList.toggle('linked', on);
      }
    }
  }

  function zoom(state, focus) {
    state.focus = focus;
    draw(state);
  }

  // The nodes above `node`, from `root` down; [] for the root.
  function ancestors(root, node) {
    if (root === node) return [];
    for (const child of root.children) {
      const below = ancestors(child, node);
      if (below !== null) return [root].concat(below);
    }
    return null;
  }

  // The breadcrumbs of a zoom: every bar above the top one, each a button
  // that zooms to it.
  function drawCrumbs(state) {
    const nav = state.container.parentElement.querySelector('.crumbs');
    if (!nav) return;
    nav.replaceChildren();
    const trail = ancestors(state.chart.root, state.focus);
    if (!trail.length) return;  // not zoomed
    nav.append('Zoomed into: ');
    trail.forEach((node) => {
      const crumb = document.createElement('button');
      crumb.type = 'button';
      crumb.className = 'crumb';
      crumb.textContent = shortName(node);
      crumb.title = node.path || node.name;
      crumb.addEventListener('click', () => zoom(state, node));
      nav.append(crumb, ' \u203a ');
    });
    const here = document.createElement('span');
    here.className = 'crumb-here';
    here.textContent = state.focus.path || state.focus.name;
    nav.append(here);
  }

  // Draws the state's focus as the top bar, its descendants below.
  function draw(state) {
    const {chart, container, focus} = state;
    drawCrumbs(state);
    const scale = Number(focus === chart.root ? chart.scale : focus.value);
    container.replaceChildren();
    if (container.closest('details:not([open])')) return;  // drawn on opening
    if (!(scale > 0)) {
      const empty = document.createElement('div');
      empty.className = 'empty';
      empty.textContent = 'Nothing counted.';
      container.appendChild(empty);
      return;
    }
    let depth = 0;
    const bars = document.createDocumentFragment();
    const place = (node, left, level, neighbour) => {
      const value = Number(node.value);
      if (!(value > 0)) return neighbour;
      const bar = makeBar(state, node, left, value / scale, level, neighbour);
      bars.appendChild(bar);
      depth = Math.max(depth, level);
      let x = left;
      let previous = null;
      for (const child of node.children) {
        previous = place(child, x, level + 1, previous);
        x += Number(child.value) / scale;
      }
      return bar.dataset.colour;
    };
    place(focus, 0, 0, null);
    container.appendChild(bars);
    container.style.height = (depth + 1) * ROW_HEIGHT + 'px';
  }

  const data = JSON.parse(document.getElementById('torchscan-data').textContent);
  const charts = [];
  const visit = (node) => {
    hueOf(node);
    node.children.forEach(visit);
  };
  for (const chart of data.charts) {
    visit(chart.root);
    const container = document.getElementById('chart-' + chart.id);
    if (!container) continue;
    charts.push({chart, container, focus: chart.root});
  }
  const drawAll = () => charts.forEach(draw);

  // ---- Tables: sort, filter, fold. ----

  // NOTE [Tree order and flat order]: a table starts in its tree order
  // (layer calls as called, indented, identical blocks folded). Sorting by
  // a column or filtering makes it a flat list of every matching row, each
  // named by its full path; the third click on the sorted heading and an
  // empty filter bring the tree back.
  function setUpTable(table) {
    const body = table.tBodies[0];
    const rows = [...body.rows];
    const dataRows = rows.filter((row) => !row.classList.contains('fold'));
    const headings = [...table.tHead.rows[0].cells];
    const numeric = headings.map((_, column) =>
      dataRows.some((row) => row.cells[column] && row.cells[column].classList.contains('num')));
    const collapsed = new Set(rows.filter((row) => row.dataset.fold).map((row) => row.dataset.fold));
    const filterBox = document.querySelector('.table-filter[data-table="' + table.dataset.name + '"]');
    const counter = document.querySelector('.table-count[data-table="' + table.dataset.name + '"]');
    const state = {column: -1, descending: false, filter: ''};

    const matches = (row) => {
      if (state.filter === '') return true;
      const keys = [row.dataset.path, row.dataset.type, row.dataset.operator];
      return keys.some((key) => key !== undefined && key.toLowerCase().includes(state.filter));
    };
    const foldedAway = (row) =>
      (row.dataset.foldedIn || '').split(' ').some((id) => collapsed.has(id));
    const compare = (a, b) => {
      const x = a.cells[state.column].dataset.value;
      const y = b.cells[state.column].dataset.value;
      if (x === '' || y === '') return x === y ? 0 : x === '' ? 1 : -1;  // n/a last
      let order;
      if (numeric[state.column]) {
        // Counts are exact integers beyond 2^53 (BigInt); ratios such as
        // FLOPs per byte are Python float reprs ("12.5", "1e+20": Number).
        const integers = /^-?\d+$/.test(x) && /^-?\d+$/.test(y);
        const [p, q] = integers ? [BigInt(x), BigInt(y)] : [Number(x), Number(y)];
        order = p < q ? -1 : p > q ? 1 : 0;
      } else {
        order = x.localeCompare(y);
      }
      return state.descending ? -order : order;
    };

    function apply() {
      const flat = state.column >= 0 || state.filter !== '';
      table.classList.toggle('flat', flat);
      let order = rows;
      if (state.column >= 0) {
        order = dataRows.slice().sort((a, b) => compare(a, b) || a.dataset.index - b.dataset.index);
      }
      let shown = 0;
      for (const row of rows) {
        const isFold = row.classList.contains('fold');
        const visible = flat ? !isFold && matches(row) : !foldedAway(row);
        row.hidden = !visible;
        if (visible && !isFold) shown++;
        const name = row.querySelector('td.layer');
        if (name) {
          if (name.dataset.name === undefined) name.dataset.name = name.textContent;
          const call = Number(row.dataset.call);
          name.textContent = flat
            ? (row.dataset.path || '<root>') + (call ? ' (call ' + (call + 1) + ')' : '')
            : name.dataset.name;
        }
        if (isFold) {
          const button = row.querySelector('.fold-toggle');
          const open = !collapsed.has(row.dataset.fold);
          button.setAttribute('aria-expanded', String(open));
          button.dataset.open = open ? '\u25be' : '\u25b8';
        }
      }
      body.append(...order);
      headings.forEach((heading, column) => {
        if (heading.hasAttribute('data-nosort')) return;
        heading.setAttribute('aria-sort',
          column !== state.column ? 'none' : state.descending ? 'descending' : 'ascending');
      });
      if (counter) {
        counter.textContent = shown + ' of ' + dataRows.length + ' rows shown' +
          (collapsed.size && !flat ? ' (identical blocks folded)' : '');
      }
    }

    headings.forEach((heading, column) => {
      if (heading.hasAttribute('data-nosort')) return;
      heading.classList.add('sort-heading');
      heading.tabIndex = 0;
      const cycle = () => {
        // Numbers sort largest first, text A to Z; then reversed; then off.
        const first = numeric[column];
        if (state.column !== column) Object.assign(state, {column, descending: first});
        else if (state.descending === first) state.descending = !first;
        else state.column = -1;
        apply();
      };
      heading.addEventListener('click', cycle);
      heading.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          cycle();
        }
      });
    });
    for (const row of rows) {
      if (!row.dataset.fold) continue;
      row.querySelector('.fold-toggle').addEventListener('click', () => {
        const id = row.dataset.fold;
        if (collapsed.has(id)) collapsed.delete(id);
        else collapsed.add(id);
        apply();
      });
    }
    if (filterBox) {
      filterBox.addEventListener('input', () => {
        state.filter = filterBox.value.trim().toLowerCase();
        apply();
      });
      filterBox.addEventListener('keydown', (event) => {
        if (event.key !== 'Escape') return;
        filterBox.value = '';
        state.filter = '';
        apply();
      });
    }
    apply();
  }

  // ---- Search: matching bars and rows highlighted. ----

  const searchBox = document.getElementById('search');
  const searchCount = document.getElementById('search-count');
  function search() {
    query = searchBox.value.trim().toLowerCase();
    drawAll();
    let rowHits = 0;
    for (const row of document.querySelectorAll('table.sortable tbody tr')) {
      const hit = !row.classList.contains('fold') &&
        matches(row.dataset.path, row.dataset.type, row.dataset.operator);
      row.classList.toggle('hit', hit);
      if (hit) rowHits++;
    }
    // The roofline plot's points are operators too.
    for (const point of document.querySelectorAll('svg.roofline circle.point')) {
      point.classList.toggle('hit', matches(undefined, undefined, point.dataset.operator));
    }
    // A folded run holding a hit says so.
    for (const fold of document.querySelectorAll('tr.fold')) {
      const hidden = document.querySelectorAll('tr[data-folded-in~="' + fold.dataset.fold + '"].hit');
      fold.classList.toggle('holds-hit', hidden.length > 0);
    }
    const barHits = document.querySelectorAll('.icicle .bar.hit').length;
    const count = (n, noun) => n + ' ' + noun + (n === 1 ? '' : 's');
    searchCount.textContent = query === '' ? '' : count(barHits, 'bar') + ' and ' + count(rowHits, 'row') + ' match';
  }

  for (const table of document.querySelectorAll('table.sortable')) {
    table.dataset.name = table.id.replace(/-table$/, '');
    setUpTable(table);
  }
  drawAll();
  for (const fold of document.querySelectorAll('details.chart-fold')) {
    fold.addEventListener('toggle', drawAll);
  }
  let resizing = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(drawAll, 100);
  });
  if (searchBox) {
    for (const button of document.querySelectorAll('.type-search')) {
      button.addEventListener('click', () => {
        searchBox.value = 'type:' + button.textContent;
        search();
      });
    }
    searchBox.addEventListener('input', search);
    searchBox.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        searchBox.value = '';
        search();
      }
    });
    // "/" anywhere but in a text field starts a search; Escape there ends it.
    document.addEventListener('keydown', (event) => {
      if (/^(INPUT|TEXTAREA)$/.test(document.activeElement.tagName)) return;
      if (event.key === '/') {
        event.preventDefault();
        searchBox.focus();
      } else if (event.key === 'Escape' && searchBox.value !== '') {
        searchBox.value = '';
        search();
      }
    });
  }
})();
