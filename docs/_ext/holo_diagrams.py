"""Two small diagram directives that draw inline SVG at build time (no JavaScript, nothing
fetched; the text stays selectable and takes the theme's colours from ``_static/holo.css``).

``sequence-diagram``: participants and messages, one a line::

    participant W as pytest worker
    participant R as CaseRunner
    W -> R: run(item)            (a call: solid arrow)
    R --> W: outcome             (an answer: dashed arrow)
    R -> R: set up               (to itself: a loop)
    == set-up ahead ==           (a divider across every lifeline)
    note R: what happens here    (a note on one lifeline; "note R..W:" spans several)

``layer-diagram``: layers from top to bottom, one a line, each a name, then its parts
(comma-separated, drawn as boxes inside it), then a caption, separated by ``|``; an arrow
joins each layer to the one below (imports go downwards only)::

    tests/ | osworld, realtimegym, synthetic | thin benchmark modules
"""

from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive, directives

CHAR = 6.9  # average width of a 12 px sans-serif character
LINE = 16


def _w(text: str, char: float = CHAR) -> float:
    return len(text) * char


def _t(x: float, y: float, text: str, cls: str = "", anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" class="{cls}">'
        f"{html.escape(text)}</text>"
    )


def _wrap(text: str, width: float) -> list[str]:
    words, lines, cur = text.split(), [], ""
    for word in words:
        if cur and _w(cur + " " + word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}".strip()
    return lines + ([cur] if cur else [])


def _figure(svg: str, caption: str | None, name: str) -> list[nodes.Node]:
    fig = nodes.container(classes=["holo-diagram", name])
    fig += nodes.raw("", svg, format="html")
    if caption:
        para = nodes.paragraph(classes=["holo-diagram-caption"])
        para += nodes.Text(caption)
        fig += para
    return [fig]


def sequence_svg(source: str) -> str:
    parts: list[tuple[str, str]] = []
    events: list[tuple[str, Any]] = []
    for raw in source.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if m := re.fullmatch(r"participant\s+(\w+)\s+as\s+(.+)", line):
            parts.append((m.group(1), m.group(2).strip()))
        elif m := re.fullmatch(r"==\s*(.+?)\s*==", line):
            events.append(("divider", m.group(1)))
        elif m := re.fullmatch(r"note\s+(\w+)(?:\.\.(\w+))?\s*:\s*(.+)", line):
            events.append(("note", (m.group(1), m.group(2) or m.group(1), m.group(3))))
        elif m := re.fullmatch(r"(\w+)\s*(-->|->)\s*(\w+)\s*:\s*(.+)", line):
            events.append(("msg", (m.group(1), m.group(2), m.group(3), m.group(4))))
        else:
            raise ValueError(f"sequence-diagram: cannot read {raw!r}")
    index = {key: i for i, (key, _) in enumerate(parts)}
    # lifelines as close as the participants' names allow; message labels wrap to their span
    gap = max(110.0, max(_w(label) + 24 for _, label in parts))
    left = 20 + gap / 2
    xs = [left + i * gap for i in range(len(parts))]
    width = xs[-1] + gap / 2 + 20
    body: list[str] = []
    y = 60.0
    for kind, ev in events:
        if kind == "divider":
            y += 14
            body.append(
                f'<line x1="10" y1="{y:.1f}" x2="{width - 10:.1f}" y2="{y:.1f}" class="divider"/>'
            )
            tw = _w(ev) + 16
            body.append(
                f'<rect x="{width / 2 - tw / 2:.1f}" y="{y - 11:.1f}" width="{tw:.1f}" '
                'height="20" rx="3" class="divider-label"/>'
            )
            body.append(_t(width / 2, y + 4, ev, "label strong"))
            y += 24
        elif kind == "note":
            a, b, text = ev
            x1, x2 = sorted((xs[index[a]], xs[index[b]]))
            x1, x2 = x1 - gap * 0.45, x2 + gap * 0.45
            if x2 - x1 < 230:  # a note on one lifeline: wide enough to read
                mid = (x1 + x2) / 2
                x1, x2 = max(10, mid - 115), min(xs[-1] + gap / 2 + 10, mid + 115)
            lines = _wrap(text, x2 - x1 - 12)
            h = len(lines) * LINE + 8
            body.append(
                f'<rect x="{x1:.1f}" y="{y:.1f}" width="{x2 - x1:.1f}" height="{h}" '
                'rx="3" class="note"/>'
            )
            for i, ln in enumerate(lines):
                body.append(_t((x1 + x2) / 2, y + 16 + i * LINE, ln, "label"))
            y += h + 12
        else:
            src, arrow, dst, text = ev
            cls = "msg dashed" if arrow == "-->" else "msg"
            x1, x2 = xs[index[src]], xs[index[dst]]
            if src == dst:
                lines = _wrap(text, gap * 1.6)
                body.append(
                    f'<path d="M{x1:.1f},{y + 4:.1f} h28 v{14 + LINE * (len(lines) - 1)}'
                    f' h-26" class="{cls}" marker-end="url(#arrow)"/>'
                )
                for i, ln in enumerate(lines):
                    body.append(_t(x1 + 34, y + 8 + i * LINE, ln, "label", "start"))
                y += 30 + LINE * (len(lines) - 1)
            else:
                lines = _wrap(text, max(abs(x2 - x1) - 12, 210))  # may cross a lifeline
                y += 2 + LINE * len(lines)
                for i, ln in enumerate(lines):
                    body.append(_t((x1 + x2) / 2, y - 4 - LINE * (len(lines) - 1 - i), ln, "label"))
                body.append(
                    f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" '
                    f'class="{cls}" marker-end="url(#arrow)"/>'
                )
                y += 12
    height = y + 50
    head: list[str] = []
    for x, (_, label) in zip(xs, parts):
        bw = _w(label) + 20
        head.append(
            f'<line x1="{x:.1f}" y1="40" x2="{x:.1f}" y2="{height - 36:.1f}" class="lifeline"/>'
        )
        for top in (10.0, height - 40):
            head.append(
                f'<rect x="{x - bw / 2:.1f}" y="{top:.1f}" width="{bw:.1f}" height="30" '
                'rx="4" class="actor"/>'
            )
            head.append(_t(x, top + 19, label, "label strong"))
    return _svg(width, height, head + body)


def _svg(width: float, height: float, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" class="holo-svg" role="img">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'class="arrowhead"/></marker></defs>' + "".join(body) + "</svg>"
    )


def layer_svg(source: str) -> str:
    rows = []
    for raw in source.splitlines():
        if raw.strip() and not raw.strip().startswith("#"):
            name, parts, caption = (s.strip() for s in (raw.split("|") + ["", ""])[:3])
            rows.append((name, [p.strip() for p in parts.split(",") if p.strip()], caption))
    width = 820.0
    inner = width - 40
    y = 10.0
    body: list[str] = []
    for i, (name, parts, caption) in enumerate(rows):
        h = 78 if parts else 50
        body.append(
            f'<rect x="20" y="{y:.1f}" width="{inner:.1f}" height="{h}" rx="6" class="layer"/>'
        )
        body.append(_t(32, y + 20, name, "label strong", "start"))
        if caption:
            body.append(_t(width - 32, y + 20, caption, "label muted", "end"))
        if parts:
            pw = (inner - 24 - 8 * (len(parts) - 1)) / len(parts)
            for j, part in enumerate(parts):
                px = 32 + j * (pw + 8)
                body.append(
                    f'<rect x="{px:.1f}" y="{y + 32:.1f}" width="{pw:.1f}" height="34" '
                    'rx="4" class="part"/>'
                )
                label = part
                while _w(label, 6.4) > pw - 8 and len(label) > 4:
                    label = label[:-2] + "…"
                body.append(_t(px + pw / 2, y + 53, label, "label small"))
        y += h
        if i < len(rows) - 1:
            body.append(
                f'<line x1="{width / 2:.1f}" y1="{y + 2:.1f}" x2="{width / 2:.1f}" '
                f'y2="{y + 22:.1f}" class="msg" marker-end="url(#arrow)"/>'
            )
            y += 26
    return _svg(width, y + 10, body)


class _Diagram(Directive):
    has_content = True
    option_spec = {"caption": directives.unchanged}
    draw = staticmethod(sequence_svg)
    name = "sequence"

    def run(self) -> list[nodes.Node]:
        try:
            svg = self.draw("\n".join(self.content))
        except (ValueError, KeyError) as e:
            raise self.error(str(e)) from e
        return _figure(svg, self.options.get("caption"), self.name)


class SequenceDiagram(_Diagram):
    pass


class LayerDiagram(_Diagram):
    draw = staticmethod(layer_svg)
    name = "layers"


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("sequence-diagram", SequenceDiagram)
    app.add_directive("layer-diagram", LayerDiagram)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
