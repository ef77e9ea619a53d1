"""The simulation's HTML report: one self-contained page (plots embedded as PNG) per run of
`lahar simulate --out DIR`, drawn with matplotlib (the `report` extra: `pip install
'lahar[report]'`).

The page holds the summary table, utilisation over time (cores of bound pods, and of those
the cores of pods whose job had started), each policy's queue shares over time (cores per
queue, stacked) and each policy's per-node timeline (the first nodes in `natural_order`, each pod
a bar coloured by its job; a pale bar is a pod bound before its job could start). When the trace's
queues form a tree, the page also has the table of shares per level (`report.level_table`) and
the cpu per tree level: a row of panels per level (level 1: the top-level queues, level 2 their
children...), a column per policy, a line per queue labelled by its path and weight, a parent's
line the sum of its children's (`series.tree_cpu`), a dotted one at a queue's cpu capability.
When the trace has a network topology, the page has the table of the gangs' placement in it
(`report.topology_table`). When it has an autoscaled pool, the page has the table of what the pool
cost each run (`report.pool_table`) and the pool's nodes over time per run (bought, and of those
joined: `node_hours.node_counts`), and utilisation is drawn in cores beside each run's cluster
cores (a share of a cluster that grows and shrinks would hide both). A flat trace's page is as
it was.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extender.api.resources import Resources
from extender.simulate import node_hours, series
from extender.simulate.natural_order import natural_key
from extender.simulate.report import (
    HEADERS,
    level_notes,
    level_table,
    notes,
    pool_notes,
    pool_table,
    row,
    topology_notes,
    topology_table,
)
from extender.simulate.run import SimulationOutcome
from extender.simulate.summary import Summary

NODES_SHOWN = 32


class ReportError(Exception):
    """The report cannot be written (no plotting library, or the folder is not writable)."""


def _pyplot() -> Any:
    try:
        import matplotlib  # noqa: PLC0415 - an optional extra, loaded only for a report

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError as error:
        raise ReportError(
            "the HTML report draws its plots with matplotlib, which is not installed: "
            "pip install 'lahar[report]'"
        ) from error
    return plt


def write(
    path: Path, outcomes: Sequence[SimulationOutcome], summaries: Sequence[Summary], label: str = ""
) -> Path:
    """Write the report on the trace `label` names to `path` (its folder made if need be); the
    path."""
    plt = _pyplot()
    figures = [
        ("Utilisation over time", _usage(plt, outcomes)),
        ("Queue shares over time", _queues(plt, outcomes)),
        (f"Per-node timeline (first {NODES_SHOWN} nodes)", _timeline(plt, outcomes)),
    ]
    trace = outcomes[0].trace
    if trace.autoscaling is not None:
        figures.insert(1, ("Nodes in the autoscaled pool over time", _nodes(plt, outcomes)))
    if trace.hierarchical:
        figures.insert(2, ("CPU per level of the queue tree", _levels(plt, outcomes)))
        _, paths, _ = series.tree_queues(trace)
        queues = ", ".join(f"{paths[q.name]} (weight {q.weight})" for q in trace.queues)
    else:
        queues = ", ".join(f"{q.name} (weight {q.weight})" for q in trace.queues) or "default"
    pool = trace.autoscaling
    grows = f", up to {pool.max_nodes} more of {pool.nodes.cpu} cpu" if pool is not None else ""
    heading = (
        (f"{label}: " if label else "")
        + f"{len(trace.jobs)} jobs, {trace.node_count} nodes ({trace.cores:g} cores{grows}), "
        f"queues: {queues}"
    )
    page = _page(heading, summaries, figures)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page)
    except OSError as error:
        raise ReportError(f"cannot write the report {path}: {error.strerror}") from error
    return path


def _png(plt: Any, figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def _usage(plt: Any, outcomes: Sequence[SimulationOutcome]) -> str:
    """Utilisation over time per run: as a share of the cluster's cpu, or, for a trace with an
    autoscaled pool (the cluster grows and shrinks), in cores beside each run's cluster cores."""
    pooled = outcomes[0].trace.autoscaling is not None
    figure, axes = plt.subplots(figsize=(10, 4))
    for index, outcome in enumerate(outcomes):
        used = series.usage(outcome)
        scale = 1.0 if pooled else 100 / outcome.trace.cores
        color = f"C{index}"
        useful = [scale * v for v in used.useful]
        axes.step(used.times, useful, where="post", color=color, label=outcome.policy)
        bound = [scale * v for v in used.bound]
        axes.step(used.times, bound, where="post", color=color, linestyle="--", alpha=0.6)
        pool = outcome.pool
        if pool is not None:
            times, _, joined = node_hours.node_counts(outcome)
            starting = outcome.trace.cores
            cores = [starting + (count - pool.starting) * pool.cores for count in joined]
            axes.step(times, cores, where="post", color=color, linestyle=":", alpha=0.8)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("cores" if pooled else "% of the cluster's cpu")
    title = "solid: pods of started jobs; dashed: every bound pod"
    axes.set_title(f"{title}; dotted: the cluster" if pooled else title)
    axes.legend()
    return _png(plt, figure)


def _nodes(plt: Any, outcomes: Sequence[SimulationOutcome]) -> str:
    """The pool's nodes over time per run: bought and not removed, and of those joined."""
    figure, axes = plt.subplots(figsize=(10, 4))
    for index, outcome in enumerate(outcomes):
        times, billed, joined = node_hours.node_counts(outcome)
        color = f"C{index}"
        axes.step(times, billed, where="post", color=color, label=outcome.policy)
        axes.step(times, joined, where="post", color=color, linestyle="--", alpha=0.6)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("nodes")
    axes.set_title("solid: nodes bought and not removed; dashed: of those, joined")
    axes.legend()
    return _png(plt, figure)


def _queues(plt: Any, outcomes: Sequence[SimulationOutcome]) -> str:
    figure, grid = plt.subplots(len(outcomes), 1, figsize=(10, 3 * len(outcomes)), squeeze=False)
    for axes, outcome in zip(grid[:, 0], outcomes, strict=True):
        times, per_queue = series.queue_cpu(outcome)
        if per_queue:
            axes.stackplot(times, *per_queue.values(), labels=list(per_queue), step="post")
            axes.legend(loc="upper right")
        axes.set_title(outcome.policy)
        axes.set_ylabel("cores")
    grid[-1, 0].set_xlabel("time (s)")
    return _png(plt, figure)


def _levels(plt: Any, outcomes: Sequence[SimulationOutcome]) -> str:
    trees = [series.tree_cpu(outcome) for outcome in outcomes]
    rows, columns = len(trees[0].levels), len(outcomes)
    capped = {
        queue.name: Resources.parse({"cpu": queue.capability["cpu"]})["cpu"] / 1000
        for queue in outcomes[0].trace.queues
        if "cpu" in queue.capability
    }
    figure, grid = plt.subplots(
        rows, columns, figsize=(6 * columns, 3 * rows), squeeze=False, sharex=True, sharey="row"
    )
    for column, (outcome, tree) in enumerate(zip(outcomes, trees, strict=True)):
        for level, names in enumerate(tree.levels):
            axes = grid[level, column]
            for index, name in enumerate(names):
                label = f"{tree.paths[name]} (weight {tree.weights[name]})"
                axes.step(
                    tree.times, tree.cores[name], where="post", label=label, color=f"C{index}"
                )
                cap = capped.get(name)
                if cap is not None:
                    axes.axhline(
                        cap,
                        color=f"C{index}",
                        linestyle=":",
                        label=f"its capability ({cap:g} cores)",
                    )
            axes.set_title(f"{outcome.policy}: level {level + 1}")
            axes.set_ylabel("cores")
            axes.legend(loc="upper right", fontsize=7)
        grid[-1, column].set_xlabel("time (s)")
    return _png(plt, figure)


def _timeline(plt: Any, outcomes: Sequence[SimulationOutcome]) -> str:
    figure, grid = plt.subplots(len(outcomes), 1, figsize=(10, 4 * len(outcomes)), squeeze=False)
    for axes, outcome in zip(grid[:, 0], outcomes, strict=True):
        names = sorted({i.node for i in outcome.intervals}, key=natural_key)[:NODES_SHOWN]
        rows = {name: index for index, name in enumerate(names)}
        jobs = {name: index for index, name in enumerate(outcome.jobs)}
        for interval in outcome.intervals:
            if interval.node not in rows:
                continue
            end = interval.end if interval.end is not None else outcome.end
            start = interval.useful_from if interval.useful_from is not None else end
            color = f"C{jobs[interval.job] % 10}"
            y = (rows[interval.node] - 0.4, 0.8)
            if start > interval.start:
                early = [(interval.start, start - interval.start)]
                axes.broken_barh(early, y, color=color, alpha=0.3)
            if end > start:
                axes.broken_barh([(start, end - start)], y, color=color)
        axes.set_yticks(range(len(names)), names, fontsize=6)
        axes.set_title(outcome.policy)
    grid[-1, 0].set_xlabel("time (s)")
    return _png(plt, figure)


def _table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str]
) -> str:
    """A titled table and the notes under it; nothing without rows."""
    if not rows:
        return ""
    return (
        f"<h2>{html.escape(title)}</h2><table><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        + "</tr>"
        + "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            for cells in rows
        )
        + "</table>"
        + "".join(f"<p>{html.escape(note)}</p>" for note in notes)
    )


def _page(heading: str, summaries: Sequence[Summary], figures: list[tuple[str, str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row(s)) + "</tr>" for s in summaries
    )
    shares = _table(
        "Shares per level of the queue tree", *level_table(summaries), level_notes(summaries)
    )
    shares += _table(
        "Gangs in the network topology", *topology_table(summaries), topology_notes(summaries)
    )
    shares += _table("The autoscaled pool", *pool_table(summaries), pool_notes(summaries))
    images = "".join(
        f'<h2>{html.escape(title)}</h2><img alt="{html.escape(title)}" '
        f'src="data:image/png;base64,{data}">'
        for title, data in figures
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>lahar simulate</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
img{{max-width:100%}}</style></head><body>
<h1>lahar simulate</h1><p>{html.escape(heading)}</p>
<table><tr>{head}</tr>{body}</table>
{"".join(f"<p>{html.escape(note)}</p>" for note in notes(summaries))}
<p>UTIL: cpu of pods whose job had started, over the cluster's cpu and the makespan; HELD: of
every bound pod; FAIRNESS: Jain's index of queue cpu over weights (1.0: shared by weight);
PARTIAL: jobs with pods on nodes before they could start.</p>
{shares}{images}
</body></html>
"""
