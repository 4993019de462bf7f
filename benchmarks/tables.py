"""The benchmarks' one table printer: aligned text, or Markdown for docs/evidence.md."""
from __future__ import annotations


def table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    """``rows`` under ``header``: a Markdown table, or columns padded to their widest
    cell."""
    cols = [header] + rows
    if markdown:
        lines = ["| " + " | ".join(c) + " |" for c in cols]
        lines.insert(1, "|" + "|".join(" --- " for _ in header) + "|")
        return "\n".join(lines)
    widths = [max(len(c[k]) for c in cols) for k in range(len(header))]
    return "\n".join("  ".join(c[k].ljust(widths[k]) for k in range(len(header))).rstrip()
                     for c in cols)
