"""A self-contained HTML ablation report (plots embedded as data URIs), so the
MLflow UI's artifact view shows it whole: markdown artifacts there do not
render images linked by relative path."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from silas_exp.analysis.columns import cells, headers
from silas_exp.analysis.decision import control_note, decision_sentence, needed_cell
from silas_exp.analysis.report import verdict_rule
from silas_exp.analysis.result import AblationResult
from silas_exp.metrics.names import display_name
from silas_exp.metrics.registry import spec
from silas_exp.stats import Outcome

_COLOUR = {Outcome.SHIP: "#1a7f37", Outcome.DO_NOT_SHIP: "#cf222e", Outcome.INCONCLUSIVE: "#9a6700"}
_STYLE = ("body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1100px;color:#1f2328}"
          "table{border-collapse:collapse;margin:.5em 0 1.2em}td,th{border:1px solid #d0d7de;"
          "padding:3px 8px;font-size:13px;text-align:left}th{background:#f6f8fa}"
          "img{max-width:100%;margin:.3em 0}code{background:#f6f8fa;padding:1px 4px}")


def _table(head: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def ablation_html(r: AblationResult, plots: list[Path]) -> str:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Ablation {e(r.sweep_id)}"
             f"</title><style>{_STYLE}</style></head><body>",
             f"<h1>Ablation — sweep <code>{e(r.sweep_id)}</code></h1>"]
    parts.append(f"<p><b>{e(decision_sentence(r, r.ranking))}</b></p>")
    parts += [f"<p><b>Note:</b> {e(n)}</p>" for n in r.notes[:1] if n == control_note(r)]
    if r.command:
        parts.append(f"<p>Reproduce: <code>{e(r.command)}</code></p>")
    parts.append(f"<p>Control: <b>{e(r.control)}</b> — {e(r.control_reason)}.</p>")
    parts.append("<p>" + e(verdict_rule(r).replace("**", "").replace("*", "")) + "</p>")
    rows = [[e(v), f"<b style='color:{_COLOUR[vv.outcome]}'>{e(vv.outcome.words)}</b>",
             e("; ".join(vv.reasons)), e(needed_cell(vv.n_needed, r.pool_cases, vv.n_repeats))]
            for v, vv in sorted(r.verdicts.items())]
    parts += ["<h2>Verdicts</h2>", _table(["variant", "verdict", "why", "to decide"], rows)]
    for p in plots:
        data = base64.b64encode(Path(p).read_bytes()).decode()
        parts.append(f"<img alt='{e(Path(p).stem)}' src='data:image/png;base64,{data}'>")
    for metric in r.metrics:
        table = r.table(metric)
        if not table:
            continue
        ms = spec(metric)
        gated = " — gated" if metric in r.gated else ""
        rows = [[e(x) for x in cells(c)] for c in table]
        parts += [f"<h3>{e(display_name(metric))} (<code>{e(metric)}</code>): {e(ms.arrow())}, "
                  f"{e(ms.unit)}{gated}</h3>",
                  _table(headers(), rows)]
    parts.append("</body></html>")
    return "\n".join(parts)
