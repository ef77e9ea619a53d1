"""Latency and throughput of the extender verbs at 1,000 and 5,000 nodes, and the service's memory.

    .venv/bin/python benchmarks/verbs.py [--nodes 1000 5000] [--calls 2000]

For each size, the real app (`extender.server.app.make_app` with the shipped policy) runs in a
child process pinned to one core, its cache filled with that many nodes (32 cpu, 256Gi) and four
bound pods per node. A client on the other core then plays the scheduler's serial cycle as the
shipped configuration calls it, for a burst of same-shape pods (a batch job's replicas): POST
/filter with the candidate names kube-scheduler sends under its adaptive node sampling (as many as
its numFeasibleNodesToFind: max(100, nodes x max(5, 50 - nodes/125)%), a window that moves along
the node list from one call to the next as the scheduler's does), then POST /bind (the binder
records the binding instead of calling an API server, so each bind changes one node as a real one
does). A second pass sends every node name with each filter call (`percentageOfNodesToScore: 100`,
the figure for a scheduler configured so). Printed: p50/p99 of each verb as the client sees it
(HTTP round trip included), calls/s of each verb alone, the first call for a new pod shape, and
the server's resident memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from multiprocessing import Process, Queue
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client.parser import text_string_to_metric_families

from extender.cache.state import ClusterState
from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.server.app import make_app
from tests.builders import PodBuilder, cluster, make_node, make_pod

POLICY = Path(__file__).resolve().parents[1] / "policy" / "lahar.yaml"
SERVER_CPU, CLIENT_CPU = 0, 1


def node_name(index: int) -> str:
    return f"node-{index:05d}"


def fill(nodes: int, pending: int) -> ClusterState:
    big = [make_node(node_name(i)).cpu("32").memory("256Gi").pods(110) for i in range(nodes)]
    bound = [
        bench_pod(f"bound-{i}", cpu=f"{i % 7 + 1}", memory=f"{i % 5 + 1}Gi").on(
            node_name(i % nodes)
        )
        for i in range(nodes * 4)
    ]
    return cluster(big, bound + [bench_pod(f"job-{i}") for i in range(pending)])


def bench_pod(name: str, cpu: str = "1", memory: str = "2Gi") -> PodBuilder:
    """A pod of the benchmark's namespace, its uid its name (so the bind call can name it)."""
    return make_pod(name).ns("bench").uid(name).cpu(cpu).memory(memory)


def serve(nodes: int, pending: int, port: int, ready: Queue) -> None:  # type: ignore[type-arg]
    os.sched_setaffinity(0, {SERVER_CPU})
    state = fill(nodes, pending)

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        return None

    app = make_app(load_policy(POLICY, REGISTRY), state=state, binder=binder)

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.put(server_rss(os.getpid()))
        await asyncio.Event().wait()

    asyncio.run(main())


def server_rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sampled(nodes: int) -> int:
    """How many feasible nodes kube-scheduler looks for (and sends) under adaptive sampling."""
    percentage = max(5, 50 - nodes // 125)
    return min(nodes, max(100, nodes * percentage // 100))


async def client(nodes: int, calls: int, port: int, every: bool) -> dict[str, Any]:
    os.sched_setaffinity(0, {CLIENT_CPU})
    names = [node_name(i) for i in range(nodes)]
    window = nodes if every else sampled(nodes)
    base = f"http://127.0.0.1:{port}"
    timings: dict[str, list[float]] = {"filter": [], "bind": []}
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def post(verb: str, body: bytes) -> bytes:
            started = time.perf_counter()
            async with session.post(
                f"{base}/{verb}", data=body, headers={"Content-Type": "application/json"}
            ) as reply:
                data = await reply.read()
                if reply.status != 200:
                    raise RuntimeError(f"{verb}: HTTP {reply.status}: {data[:200]!r}")
            timings[verb].append(time.perf_counter() - started)
            return data

        # The first call for a shape builds that shape's table over every node.
        cold = time.perf_counter()
        cold_pod = bench_pod("cold", cpu="3").build()
        await post("filter", go_json({"Pod": cold_pod, "NodeNames": names}))
        cold_ms = (time.perf_counter() - cold) * 1000
        for samples in timings.values():
            samples.clear()

        start = 0
        for index in range(calls):
            name = f"job-{index}"
            pod = bench_pod(name).build()
            offered = (names[start:] + names[:start])[:window]
            start = (start + window) % nodes
            body = go_json({"Pod": pod, "NodeNames": offered})
            passed = json.loads(await post("filter", body))["NodeNames"]
            binding = {"PodName": name, "PodNamespace": "bench", "PodUID": name, "Node": passed[0]}
            await post("bind", json.dumps(binding).encode())
        async with session.get(f"{base}/metrics") as reply:
            metrics = await reply.text()
    return {
        "cold_ms": cold_ms,
        "timings": timings,
        "server_ms": server_means(metrics),
        "window": window,
    }


def server_means(metrics: str) -> dict[str, float]:
    """Mean time inside the server per verb (its latency histogram), in ms; warm-up included."""
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics):
        if family.name != "lahar_extender_request_duration_seconds":
            continue
        for sample in family.samples:
            into = {"_sum": sums, "_count": counts}.get(sample.name.removeprefix(family.name))
            if into is not None:
                into[sample.labels["verb"]] = sample.value
    return {verb: sums[verb] / counts[verb] * 1000 for verb in sums if counts.get(verb)}


def go_json(args: dict[str, Any]) -> bytes:
    """ExtenderArgs as kube-scheduler's Go encoder writes it: compact, fields in struct order."""
    ordered = {"Pod": args["Pod"], "Nodes": None, "NodeNames": args["NodeNames"]}
    return json.dumps(ordered, separators=(",", ":")).encode()


def summary(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    return p50, p99, len(ordered) / sum(ordered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--calls", type=int, default=2000, help="pods per burst (default 2000)")
    parser.add_argument("--port", type=int, default=18998)
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("note: fewer than 2 cores; server and client share one", file=sys.stderr)
    print(
        f"{'nodes':>6} {'names':>6} {'verb':<7} {'p50 ms':>7} {'p99 ms':>7} {'calls/s':>8} "
        f"{'in server':>10}"
    )
    for nodes in args.nodes:
        for every in (False, True):
            ready: Queue = Queue()  # type: ignore[type-arg]
            server = Process(target=serve, args=(nodes, args.calls, args.port, ready), daemon=True)
            server.start()
            try:
                ready.get(timeout=300)
                result = asyncio.run(client(nodes, args.calls, args.port, every))
                rss = server_rss(server.pid or 0)
            finally:
                server.terminate()
                server.join()
            for verb, samples in result["timings"].items():
                p50, p99, rate = summary(samples)
                inside = result["server_ms"].get(verb, float("nan"))
                print(
                    f"{nodes:>6} {result['window']:>6} {verb:<7} {p50:>7.2f} {p99:>7.2f} "
                    f"{rate:>8.0f} {inside:>7.2f} ms"
                )
        pods = nodes * 4 + args.calls
        print(
            f"{nodes:>6} first filter for a new pod shape: {result['cold_ms']:.1f} ms; "
            f"server RSS {rss:.0f} MiB ({nodes} nodes, {pods} pods cached)"
        )


if __name__ == "__main__":
    main()
