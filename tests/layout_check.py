"""Shared by the browser tests: what a page draws that a reader could not read. Every
visible SVG text box must lie inside its SVG (a clipped label), and no two visible text
boxes of one SVG may intersect (a label over another); every plotly chart must be drawn."""

from __future__ import annotations

from typing import Any

VIEWPORTS = ({"width": 1280, "height": 800}, {"width": 1920, "height": 1080})
TOLERANCE_PX = 1.0  # anti-aliasing and sub-pixel rounding, not a real overlap

LAYOUT_JS = """(tol) => {
  const problems = [];
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width < 0.5 || r.height < 0.5 || !el.textContent.trim()) return false;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0)
        return false;
    }
    return true;
  };
  const name = (svg) => svg.getAttribute('aria-label')
    || (svg.closest('[id]') ? svg.closest('[id]').id : 'svg');
  const roots = [...document.querySelectorAll('svg')].filter(s => !s.parentElement.closest('svg'));
  for (const svg of roots) {
    const sr = svg.getBoundingClientRect();
    if (sr.width < 1 || sr.height < 1) continue;
    const boxes = [...svg.querySelectorAll('text')].filter(visible)
      .map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
    for (const [s, r] of boxes) {
      if (r.left < sr.left - tol || r.right > sr.right + tol || r.top < sr.top - tol
          || r.bottom > sr.bottom + tol)
        problems.push(`clipped in ${name(svg)}: "${s}"`);
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i][1], b = boxes[j][1];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > tol && h > tol)
          problems.push(`overlap in ${name(svg)}: "${boxes[i][0]}" / "${boxes[j][0]}"`);
      }
    }
  }
  const charts = [...document.querySelectorAll('.plotly-graph-div, div.plot')];
  for (const c of charts) {
    if (!c.querySelector('.main-svg')) problems.push(`chart not drawn: ${c.id || 'plot'}`);
  }
  return problems;
}"""


def layout_problems(page: Any) -> list[str]:
    """Clipped or overlapping SVG text and undrawn charts on ``page`` (a Playwright page)."""
    found: list[str] = page.evaluate(LAYOUT_JS, TOLERANCE_PX)
    return found


def wait_for_charts(page: Any) -> None:
    """Until every plotly chart of the page has drawn its SVG."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plotly-graph-div, div.plot')]"
        ".every(d => d.querySelector('.main-svg'))")
