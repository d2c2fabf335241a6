// Draws the icicle charts of a TorchScan report page from its JSON block
// (report/render/html_report.h). A chart is {id, unit, scale, root}; a node
// is {name, path, type, value, status, mark?, children}. Values are exact
// decimal strings (counts pass 2^53); a bar is value / scale of the chart's
// width, so charts of one group share a scale.
'use strict';
(function () {
  const ROW_HEIGHT = 24;
  const GE = '\u2265 ';

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

  // One colour per module class, the same in every chart.
  function colour(node) {
    let hue = 0;
    for (const c of node.type || node.name) hue = (hue * 31 + c.codePointAt(0)) % 360;
    return 'hsl(' + hue + ', 55%, 80%)';
  }

  function makeBar(chart, node, top, left, width, depth) {
    const bar = document.createElement('div');
    const bound = node.status === 'complete' ? '' : GE;
    bar.className = 'bar ' + node.status + (node.mark ? ' mark-' + node.mark : '');
    bar.style.left = left * 100 + '%';
    bar.style.width = width * 100 + '%';
    bar.style.top = depth * ROW_HEIGHT + 'px';
    bar.style.backgroundColor = colour(node);
    bar.textContent = node.name + ' ' + bound + scaled(Number(node.value), chart.unit);
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
    return bar;
  }

  // Draws `focus` as the top bar; `trail` holds the foci zoomed out of.
  function draw(chart, container, focus, trail) {
    const scale = Number(focus === chart.root ? chart.scale : focus.value);
    container.replaceChildren();
    if (!(scale > 0)) {
      const empty = document.createElement('div');
      empty.className = 'empty';
      empty.textContent = 'Nothing counted.';
      container.appendChild(empty);
      return;
    }
    let depth = 0;
    const place = (node, left, level) => {
      const value = Number(node.value);
      if (!(value > 0)) return;
      const bar = makeBar(chart, node, focus, left, value / scale, level);
      bar.addEventListener('click', () => {
        if (node === focus && trail.length) draw(chart, container, trail.pop(), trail);
        else if (node !== focus) draw(chart, container, node, trail.concat([focus]));
      });
      container.appendChild(bar);
      depth = Math.max(depth, level);
      let x = left;
      for (const child of node.children) {
        place(child, x, level + 1);
        x += Number(child.value) / scale;
      }
    };
    place(focus, 0, 0);
    container.style.height = (depth + 1) * ROW_HEIGHT + 'px';
  }

  const data = JSON.parse(document.getElementById('torchscan-data').textContent);
  for (const chart of data.charts) {
    draw(chart, document.getElementById('chart-' + chart.id), chart.root, []);
  }
})();
