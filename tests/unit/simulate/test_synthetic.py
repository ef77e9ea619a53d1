"""The synthetic trace: reproducible, valid, and the shipped example is exactly its output."""

from __future__ import annotations

from pathlib import Path

import yaml

from extender.simulate.synthetic import QUEUES, TREE, dump, generate
from extender.simulate.trace import parse_trace

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
EXAMPLE = EXAMPLES / "trace-multiqueue.yaml"


def test_the_shipped_example_is_the_generator_with_its_defaults() -> None:
    assert EXAMPLE.read_text() == dump(generate())


def test_the_shipped_hierarchy_example_is_the_generator_with_hierarchy() -> None:
    text = (EXAMPLES / "trace-hierarchy.yaml").read_text()
    assert text == dump(generate(hierarchy=True))
    assert "`python -m extender.simulate.synthetic --hierarchy`" in text


def test_with_hierarchy_the_queues_form_a_tree_and_jobs_go_in_its_leaves() -> None:
    trace = parse_trace(yaml.safe_load(dump(generate(1000, 10, hierarchy=True))))
    assert trace.children == {"ml": ("team-a", "team-b")}
    assert {q.name: q.weight for q in trace.queues} == {n: w for n, w, _, _ in TREE}
    web = next(q for q in trace.queues if q.name == "web")
    assert web.capability == {"cpu": "96"}  # 30% of 10 x 32 cpu
    drawn = [job.queue for job in trace.jobs]
    assert set(drawn) == {"team-a", "team-b", "web"}
    assert 0.35 < drawn.count("team-a") / len(drawn) < 0.45  # 40%
    assert 0.15 < drawn.count("web") / len(drawn) < 0.25  # 20%
    assert generate(50, 5, seed=7) == generate(50, 5, seed=7, hierarchy=False)


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


def test_the_shipped_topology_example_is_the_generator_with_topology() -> None:
    text = (EXAMPLES / "trace-topology.yaml").read_text()
    assert text == dump(generate(300, 64, topology=True))
    assert "`python -m extender.simulate.synthetic --topology --jobs 300 --nodes 64`" in text


def test_with_topology_the_jobs_ask_to_stay_within_switches_and_spines() -> None:
    trace = parse_trace(yaml.safe_load(dump(generate(1000, 32, topology=True))))
    assert trace.tier_names == {"switch": 1, "spine": 2}
    assert [h.name for h in trace.hyper_nodes] == [
        *(f"switch-{n}" for n in range(8)),
        "spine-0",
        "spine-1",
    ]
    asked = [job.network_topology for job in trace.jobs]
    hard = [
        t for t in asked if t is not None and t.highest_tier_name == "switch" and t.mode == "hard"
    ]
    soft = [t for t in asked if t is not None and t.mode == "soft"]
    partitioned = [job for job in trace.jobs if job.tasks[0].partition_policy is not None]
    assert 0.35 < len(hard) / len(asked) < 0.45  # 40%
    assert 0.15 < len(soft) / len(asked) < 0.25  # 20%
    assert 0.07 < len(partitioned) / len(asked) < 0.13  # 10%
    assert all(4 <= job.size <= 8 for job in trace.jobs if job.network_topology in hard + soft)
    assert {job.size for job in partitioned} == {8, 16}
    assert generate(50, 8, seed=3) == generate(50, 8, seed=3, topology=False)
