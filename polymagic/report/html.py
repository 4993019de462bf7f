"""Rich HTML report for notebooks.

:class:`HtmlReport` has ``_repr_html_`` (notebooks) and ``__repr__`` (terminal
IPython gets the plain-text report), so the magic can simply display it.  The
HTML is self-contained: inline styles only, so it renders the same in Jupyter,
JupyterLab, VS Code and exported HTML, without any CSS of ours being loaded.
"""
from __future__ import annotations

from html import escape

from ..compiler import Compiled
from ..runtime.run import RunReport
from . import fmt
from .text import to_text
from .views import View, views

_OK = "#1a7f37"
_BAD = "#cf222e"
_MUTED = "#57606a"


def _badge(report) -> str:
    """Green OK / red MISMATCH pill."""
    if report.ok:
        label, color = ("OK" if report.checked else "NOT CHECKED"), (_OK if report.checked else _MUTED)
    else:
        label, color = "MISMATCH", _BAD
    return (f'<span style="background:{color};color:white;font-weight:bold;'
            f'padding:2px 8px;border-radius:10px;font-size:90%">{label}</span>')


def _check_detail(report) -> str:
    line = fmt.check_line(report)
    return escape(line.split(": ", 2)[-1] if line.startswith("check: ") else line)


def _times_table(report, compile_s) -> str:
    rows = fmt.times(report, compile_s)
    if report.target in ("gpu", "openmp") and fmt.speedup(report):
        rows.append(("CPU / device", fmt.speedup(report)))
    cells = "".join(
        f'<tr><td style="text-align:left;padding:1px 12px 1px 0;color:{_MUTED}">{escape(k)}</td>'
        f'<td style="text-align:right;padding:1px 0;font-family:monospace">{escape(v)}</td></tr>'
        for k, v in rows)
    return f'<table style="border-collapse:collapse;margin:4px 0;font-size:90%">{cells}</table>'


def _per_array(report) -> str:
    if report.ok or not report.per_array:
        return ""
    items = "".join(f"<li><code>{escape(str(n))}</code>: {escape(fmt.fields(i))}</li>"
                    for n, i in report.per_array.items())
    return f'<ul style="margin:2px 0 4px 16px;font-size:90%">{items}</ul>'


def highlight(code: str, language: str) -> str:
    """Syntax-highlighted ``<pre>`` with inline styles (pygments), or escaped text."""
    try:
        from pygments import highlight as _hl
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        lexer = get_lexer_by_name(language if language != "text" else "text")
        return _hl(code, lexer, HtmlFormatter(noclasses=True, nowrap=False,
                                              style="default"))
    except Exception:
        return f"<pre>{escape(code)}</pre>"


_CUDA_KEYWORDS = (
    "if else for while do return break continue switch case default goto sizeof "
    "const static extern inline volatile restrict __restrict__ struct typedef "
    "__global__ __device__ __host__ __shared__ __constant__ __syncthreads __forceinline__")
_CUDA_TYPES = ("void int long short char float double unsigned signed bool size_t "
               "int64_t int32_t uint64_t uint32_t dim3")
_CUDA_TOKENS = None


def highlight_fast(code: str) -> str:
    """Syntax-highlighted ``<pre>`` of C/CUDA in one regular-expression pass (comments,
    preprocessor lines, strings, numbers, keywords, types, built-in ids): what the
    explorer shows on every regeneration, a few ms where pygments takes tens."""
    import re
    global _CUDA_TOKENS
    if _CUDA_TOKENS is None:
        kw = "|".join(_CUDA_KEYWORDS.split())
        ty = "|".join(_CUDA_TYPES.split())
        _CUDA_TOKENS = re.compile(
            r"(?P<c>//[^\n]*|/\*.*?\*/)|(?P<p>^[ \t]*#[^\n]*)|(?P<s>\"(?:\\.|[^\"\\])*\")"
            r"|(?P<n>\b\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[fFuUlL]*\b)"
            rf"|(?P<k>\b(?:{kw})\b)|(?P<t>\b(?:{ty})\b)"
            r"|(?P<b>\b(?:threadIdx|blockIdx|blockDim|gridDim)\b)", re.S | re.M)
    colors = {"c": "color:#3D7B7B;font-style:italic", "p": "color:#9C6500",
              "s": "color:#BA2121", "n": "color:#666666", "k": "color:#008000;font-weight:bold",
              "t": "color:#B00040", "b": "color:#0000FF"}
    out, pos = [], 0
    for m in _CUDA_TOKENS.finditer(code):
        out.append(escape(code[pos:m.start()]))
        out.append(f'<span style="{colors[m.lastgroup]}">{escape(m.group())}</span>')
        pos = m.end()
    out.append(escape(code[pos:]))
    return ('<div class="highlight"><pre style="line-height:125%;margin:0">'
            + "".join(out) + "</pre></div>")


def _details(v: View, open_: bool) -> str:
    return (f'<details{" open" if open_ else ""} style="margin:4px 0">'
            f'<summary style="cursor:pointer;color:{_MUTED}">{escape(v.title)}</summary>'
            f'<div style="max-height:480px;overflow:auto;font-size:85%">'
            f'{highlight(v.text, v.language)}</div></details>')


def with_terms(text: str, used: set[str]) -> str:
    """``text`` escaped, the first use of each glossary term (across one report:
    ``used``) wrapped in ``<abbr>`` with its definition as the tooltip."""
    import re
    from .glossary import TERMS
    words = sorted((t for t in TERMS), key=lambda t: -len(t.word))
    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(escape(t.word))}(?![\w-])"
                                  for t in words), re.I)
    by_word = {escape(t.word).lower(): t for t in TERMS}
    out, pos = [], 0
    body = escape(text)
    for m in pattern.finditer(body):
        term = by_word.get(m.group().lower())
        if term is None or term.word in used:
            continue
        used.add(term.word)
        out.append(body[pos:m.start()])
        out.append(f'<abbr title="{escape(term.text)}" style="text-decoration:underline dotted">'
                   f'{m.group()}</abbr>')
        pos = m.end()
    out.append(body[pos:])
    return "".join(out)


def why_html(notes, open_: bool = False) -> str:
    """The collapsible "Why" section: every note, grouped by kernel and stage."""
    from .why import grouped, stage_title
    if not notes:
        return ""
    parts = []
    for kernel, stages in grouped(notes):
        items = "".join(
            f'<li><span style="color:{_MUTED}">{escape(stage_title(stage))}</span><ul>'
            + "".join(f"<li>{escape(n.after_kernel())}</li>" for n in group) + "</ul></li>"
            for stage, group in stages)
        parts.append(f"<li><b>{escape(kernel)}</b><ul>{items}</ul></li>")
    return (f'<details{" open" if open_ else ""} style="margin:4px 0">'
            f'<summary style="cursor:pointer;color:{_MUTED}">Why: {len(notes)} note'
            f'{"s" if len(notes) != 1 else ""} by kernel and stage</summary>'
            f'<ul style="font-size:85%;margin:2px 0">{"".join(parts)}</ul></details>')


def terms_html(used: set[str]) -> str:
    """The definitions of the glossary terms a report used (collapsed)."""
    from .glossary import TERMS
    rows = [t for t in TERMS if t.word in used]
    if not rows:
        return ""
    items = "".join(f"<li><b>{escape(t.word)}</b>: {escape(t.text)}"
                    + (f" <i>({escape(t.source)})</i>" if t.source else "") + "</li>"
                    for t in rows)
    return (f'<details style="margin:4px 0"><summary style="cursor:pointer;color:{_MUTED}">'
            f'Terms</summary><ul style="font-size:85%;margin:2px 0">{items}</ul></details>')


def to_html(report: RunReport, compiled: Compiled, show=()) -> str:
    """The full HTML report: the same lines as the text report (at most three notes),
    every note under a collapsed "Why", the glossary's definitions as tooltips and
    under "Terms", the generated CUDA collapsed unless ``--show cuda`` asked for it;
    other ``--show`` views follow, open."""
    from .summary import summary_words
    from .text import all_notes, element_bytes, ran_on
    from .why import settled_arrays, top
    name = compiled.scop.name
    used: set[str] = set()
    words = summary_words(compiled)
    if name and words.startswith(f"{name}: "):
        words = words[len(name) + 2:]
    parts = [
        '<div style="font-family:sans-serif;line-height:1.4">',
        f'<div>{_badge(report)} <b>{escape(name)}</b> '
        f'<span style="color:{_MUTED}">on {escape(report.target)}</span> '
        f'&nbsp;{_check_detail(report)}</div>',
        _per_array(report),
        f'<div style="font-size:90%;margin:4px 0">{with_terms(words, used)}</div>',
        _times_table(report, compiled.compile_s),
    ]
    meta = [escape(ran_on(report))]
    mem = fmt.memory_line(report, element_bytes(compiled))
    if mem:
        meta.append(with_terms(mem, used))
    if report.wrote_back:
        meta.append(escape("wrote back: " + ", ".join(report.wrote_back)))
    if report.returned is not None:
        meta.append(escape(f"returned: {report.returned!r}"))
    notes = all_notes(report, compiled)
    meta.extend(with_terms(f"note: {n}", used)
                for n in top(notes, settled=settled_arrays(compiled.program)))
    if not report.notes and report.message:
        meta.append(escape(report.message))
    parts.append(f'<div style="color:{_MUTED};font-size:90%">' + "<br>".join(meta) + "</div>")
    shown = list(show)
    parts.append(why_html(notes, open_="notes" in shown))
    parts.append(terms_html(used))
    order = ["cuda"] + [s for s in shown if s not in ("cuda", "notes")]
    for v in views(order, compiled, report):
        parts.append(_details(v, open_=(v.name in shown)))
    parts.append("</div>")
    return "".join(parts)


class HtmlReport:
    """A displayable report: HTML in notebooks, the text report in terminals."""

    def __init__(self, report: RunReport, compiled: Compiled, show=()):
        self.report = report
        self.compiled = compiled
        self.show = tuple(show)

    @property
    def ok(self) -> bool:
        return bool(self.report.ok)

    def _repr_html_(self) -> str:
        return to_html(self.report, self.compiled, self.show)

    def __repr__(self) -> str:
        return to_text(self.report, self.compiled, self.show).rstrip("\n")


def autotune_html(result) -> str:
    """``--autotune``: the choice and why, the heat map (PNG) and every candidate with
    the numbers its one score is made of (the rule in the caption)."""
    import base64
    from . import plots
    png = base64.b64encode(plots.to_png(plots.autotune(result))).decode()
    gpu = result.mode == "gpu"
    rows = []
    for c in sorted(result.candidates, key=lambda c: (not c.ok, c.score)):
        state = (f"skipped: {c.skipped}" if c.skipped else
                 f"failed: {c.error}" if not c.ok else f"{c.score:.2f}")

        def rel(x, ratio, form):
            if x is None:
                return "–"
            return form(x) + (f" (×{ratio:.2f})" if ratio else "")
        sectors = rel(c.transactions if c.transactions is not None else c.traffic,
                      c.traffic_ratio, lambda x: f"{x:,}")
        cost = rel(c.model_cost, c.cost_ratio, lambda x: f"{x:.3g}")
        fill = f"{c.fill:.0%}" if c.fill is not None else "–"
        secs = fmt.seconds(c.seconds) if c.seconds is not None else "–"
        mark = " ★" if c is result.best else ""
        cells = [f"<td><code>{escape(c.label())}</code>{mark}</td>",
                 f"<td>{escape(c.source)}</td>", f"<td>{escape(state)}</td>"]
        if not gpu:
            cells += [f"<td style='text-align:right'>{sectors}</td>",
                      f"<td style='text-align:right'>{cost}</td>",
                      f"<td style='text-align:right'>{fill}</td>"]
        cells += [f"<td style='text-align:right'>"
                  f"{c.blocks if c.blocks is not None else '–'}</td>",
                  f"<td style='text-align:right'>{secs}</td>"]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    heads = ["configuration", "from", "score"]
    if not gpu:
        heads += ["memory sectors (32 B, emulator)", "model cost (seed 000 §4.3)",
                  "GPU filled"]
    heads += ["blocks", "time"]
    notes = "".join(f"<li>{escape(str(n))}</li>" for n in result.notes)
    return (f'<div class="polymagic-autotune"><div><b>{escape(result.summary())}</b></div>'
            f'<div style="font-size:90%;color:{_MUTED}">{escape(result.score_rule())}</div>'
            f'<details><summary>{len(result.candidates)} candidate(s)</summary>'
            f"<table><tr>{''.join(f'<th>{escape(h)}</th>' for h in heads)}</tr>"
            f"{''.join(rows)}</table><ul>{notes}</ul></details>"
            f'<img src="data:image/png;base64,{png}" style="max-width:560px"/></div>')


class AutotuneReport:
    """A displayable ``--autotune`` result: HTML with the heat map, text in terminals."""

    def __init__(self, result):
        self.result = result

    def _repr_html_(self) -> str:
        return autotune_html(self.result)

    def __repr__(self) -> str:
        from .text import autotune_lines
        return "\n".join(autotune_lines(self.result))
