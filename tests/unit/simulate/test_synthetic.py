"""The synthetic trace: reproducible, valid, and the shipped example is exactly its output."""

from __future__ import annotations

from pathlib import Path

import yaml

from extender.simulate.synthetic import QUEUES, dump, generate
from extender.simulate.trace import parse_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "trace-multiqueue.yaml"


def test_the_shipped_example_is_the_generator_with_its_defaults() -> None:
    assert EXAMPLE.read_text() == dump(generate())


def test_the_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    assert generate(50, 5, seed=7) == generate(50, 5, seed=7)
    assert generate(50, 5, seed=7) != generate(50, 5, seed=8)


def test_it_is_a_valid_trace_drawn_as_documented() -> None:
    trace = parse_trace(yaml.safe_load(dump(generate(2000, 20))))
    assert trace.node_count == 20
    assert [q.name for q in trace.queues] == [name for name, _, _ in QUEUES]
    arrivals = [job.arrival for job in trace.jobs]
    assert arrivals == sorted(arrivals)
    sizes = [job.size for job in trace.jobs]
    assert set(sizes) <= {1, 2, 4, 8, 16, 32}
    assert 0.25 < sizes.count(1) / len(sizes) < 0.35  # 30% single pods
    durations = sorted(job.tasks[0].duration for job in trace.jobs)
    assert 200 < durations[len(durations) // 2] < 450  # median about 5 minutes
    assert all(30 <= d <= 4 * 3600 for d in durations)
    high = sum(1 for job in trace.jobs if job.priority == 100)
    assert 0.06 < high / len(trace.jobs) < 0.14
