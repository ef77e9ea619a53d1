"""Where the what-if simulator's time goes under Lahar's policy: the walks of the fair order.

    .venv/bin/python benchmarks/walks.py [--sizes 1000/100 2000/200] [--load 1.5]

Plays the synthetic trace of each size JOBS/NODES (as `benchmarks/simulate.py` does) with the
gang ledger watched from outside: the engine's own methods are wrapped for this run only, so the
code measured has no counters in it. Printed per size:

- walks: how many times the fair order of the waiting gangs was lined up afresh, by what moved
  since the order before (`cluster`: pods or nodes; `gangs`: PodGroups or members' phases;
  `queues`; `ledger`: admissions and reservations; `expired`: a gang started starving, a backoff
  or a wait ran out; `dropped`: the ledger dropped its order), and the turns each cause cost;
- turns: gangs planned in those walks (a walk is taken only as far as the deepest gang asked
  about), per walk, and how many times a gang asked about took a walk further;
- what the turns said: admitted, refused (and of those, when no node had the cpu for the gang's
  smallest member any more), and how many times a starving gang drained capacity (or, past
  the point where nothing in line fits, only worked out where it aims); and how many refusals
  past that point were worked out because someone read them;
- wall seconds: the whole run, lining up new walks (the contenders that changed, and their
  ranks: `gangs.contending`), taking turns
  (drains included), and the preemption pass's victim search (its pool and victims).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulate import policy_named, size  # benchmarks/simulate.py

from extender.api.resources import CPU
from extender.cli.kubectl import table
from extender.gangs import order as order_module
from extender.gangs.ledger import Gangs
from extender.gangs.placement import members_to_plan
from extender.gangs.walks import Walks
from extender.preemption import plan as preemption
from extender.simulate.run import simulate
from extender.simulate.synthetic import LOAD, generate
from extender.simulate.trace import parse_trace

CAUSES = ("cluster", "gangs", "queues", "topology", "ledger")  # the parts of the ledger's state key


class Watch:
    """Counts what the ledger and the walk do, by wrapping their methods (`install`)."""

    def __init__(self) -> None:
        self.walks: Counter[str] = Counter()
        self.walk_turns: Counter[str] = Counter()
        self.turns: Counter[str] = Counter()
        self.asked = 0
        self.seconds: dict[str, float] = defaultdict(float)
        self._orders: list[tuple[str, Any]] = []

    def install(self) -> Callable[[], None]:
        """Wrap the methods; returns what puts the originals back."""
        watch = self
        walked: Callable[..., Any] = Gangs._walked
        take: Callable[..., None] = Walks.take
        turn: Callable[..., Any] = order_module._Claims.turn
        drain: Callable[..., Any] = order_module.drain

        def _walked(gangs: Gangs, state: Any, *args: Any, **kwargs: Any) -> Any:
            before, started = gangs._walks._order, time.perf_counter()
            made = walked(gangs, state, *args, **kwargs)
            if made is not before:
                watch.seconds["lining up new walks"] += time.perf_counter() - started
                watch._orders.append((watch._cause(gangs, state, before), made))
            return made

        def _take(walks: Walks, order: Any, now: float, until: str | None = None) -> None:
            if until is not None and until not in order.turns:
                watch.asked += 1
            started = time.perf_counter()
            take(walks, order, now, until)
            watch.seconds["taking turns"] += time.perf_counter() - started

        def timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
            def run(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    watch.seconds[label] += time.perf_counter() - started

            return run

        pool_of = preemption.Pool.__dict__["of"]  # a classmethod, put back as it was
        search = "preemption's victim search"

        def _turn(claims: Any, gang: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("final"):  # a refusal past the point where nothing fits, read
                watch.turns["past the point nothing fits, worked out when read"] += 1
                return turn(claims, gang, *args, **kwargs)
            members, _ = members_to_plan(gang)
            smallest = min((pod.request[CPU] for pod in members), default=0)
            most = claims.room.most_free_cpu
            made = turn(claims, gang, *args, **kwargs)
            watch.turns["admitted" if made.slots else "refused"] += 1
            if not made.slots and most < smallest:
                watch.turns["refused, no node with the cpu"] += 1
            return made

        def _drain(*args: Any) -> Any:
            watch.turns["a starving gang drained (or aimed)"] += 1
            return drain(*args)

        wrapped = [
            (Gangs, "_walked", walked, _walked),
            (Walks, "take", take, _take),
            (order_module._Claims, "turn", turn, _turn),
            (order_module, "drain", drain, _drain),
            (
                preemption,
                "victims_for",
                preemption.victims_for,
                timed(search, preemption.victims_for),
            ),
            (preemption.Pool, "of", pool_of, classmethod(timed(search, pool_of.__func__))),
        ]
        for owner, name, _, wrapper in wrapped:
            setattr(owner, name, wrapper)

        def restore() -> None:
            for owner, name, original, _ in wrapped:
                setattr(owner, name, original)

        return restore

    def _cause(self, gangs: Gangs, state: Any, before: Any) -> str:
        if before is None:
            return "dropped" if self._orders else "first"
        now = gangs._state_key(state)
        moved = [c for c, a, b in zip(CAUSES, before.made_at, now, strict=True) if a != b]
        return "+".join(moved) if moved else "expired"

    def settle(self) -> None:
        for cause, made in self._orders:
            self.walks[cause] += 1
            self.walk_turns[cause] += len(made.turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=size, nargs="*", default=[(1000, 100), (2000, 200)])
    parser.add_argument("--load", type=float, default=LOAD, help="offered work / capacity")
    args = parser.parse_args()
    logging.getLogger("extender").setLevel(logging.WARNING)
    policy = policy_named("lahar")
    for jobs, nodes in args.sizes:
        trace = parse_trace(generate(jobs, nodes, load=args.load))
        watch = Watch()
        restore = watch.install()
        try:
            outcome = simulate(trace, policy, "lahar")
        finally:
            restore()
        watch.seconds["the whole run"] = outcome.seconds
        watch.settle()
        walks, turns = sum(watch.walks.values()), sum(watch.walk_turns.values())
        print(
            f"{jobs}/{nodes} load {args.load}: {walks} walks, {turns} turns "
            f"({turns / max(1, walks):.0f} a walk); {watch.asked} times a gang asked about "
            "took a walk further"
        )
        rows = [
            (cause, str(watch.walks[cause]), str(watch.walk_turns[cause]))
            for cause in sorted(watch.walk_turns, key=lambda c: -watch.walk_turns[c])
        ]
        print(table(("WALKS AFTER", "WALKS", "TURNS"), rows))
        print(table(("TURNS", "COUNT"), [(k, str(v)) for k, v in watch.turns.items()]))
        print(table(("WALL", "SECONDS"), [(k, f"{v:.1f}") for k, v in watch.seconds.items()]))
        print()


if __name__ == "__main__":
    main()
