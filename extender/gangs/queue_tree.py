"""The queue tree: Volcano's hierarchical queues, by each Queue's `spec.parent`, under `root`.

`root` is the top of the tree whether or not a Queue of that name exists (Volcano's scheduler
creates one; Lahar needs none). A queue naming no parent, or `root`, hangs under root. A queue
whose parent does not exist, or whose parents lead back to itself, also hangs under root, and
`strays` says why: the webhook refuses both, but a tree applied without it still schedules, each
such queue as a top-level one. Gangs go in *leaf* queues (those no queue names as parent);
`root` never has any.

A tree where every queue hangs under root is *flat*: the sharing, the fair order and reclaim then
work queue by queue exactly as they do without hierarchy, at the same cost. Paths are written as
Volcano's hierarchy annotation writes them: `root/ml/team-a`. Pure.

The same concept at a higher layer: `admission.queue_tree`, the rules that keep the tree whole (the
webhook refuses the strays this tree hangs under root).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from extender.api.scheduling import ROOT, Queue


@dataclass(frozen=True)
class QueueTree:
    parents: Mapping[str, str]  # every queue but root -> its parent (ROOT at the top level)
    children: Mapping[str, tuple[str, ...]]  # per queue with children (and ROOT), sorted
    strays: Mapping[str, str] = field(default_factory=dict)  # queue -> why it hangs under root
    loops: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # queue -> its loop

    @classmethod
    def of(cls, queues: Mapping[str, Queue]) -> QueueTree:
        return cls.named({name: queue.spec.parent for name, queue in queues.items()})

    @classmethod
    def named(cls, named: Mapping[str, str]) -> QueueTree:
        """The tree of queues given by name, each with the parent it names ("" for none)."""
        parents: dict[str, str] = {}
        strays: dict[str, str] = {}
        loops: dict[str, tuple[str, ...]] = {}
        for name, given in named.items():
            if name == ROOT:
                continue
            parent = given or ROOT
            if parent != ROOT and parent not in named:
                strays[name] = f"its parent queue {parent} does not exist"
                parent = ROOT
            parents[name] = parent
        for name in sorted(parents):  # a loop: each queue on it hangs under root instead
            seen = [name]
            at = parents[name]
            while at != ROOT and at not in seen:
                seen.append(at)
                at = parents[at]
            if at != ROOT:
                loop = (*seen[seen.index(at) :], at)
                for looped in loop[:-1]:
                    loops[looped] = loop
                    strays[looped] = "its parents form a loop: " + " -> ".join(loop)
                    parents[looped] = ROOT
        children: dict[str, list[str]] = {}
        for name, parent in parents.items():
            children.setdefault(parent, []).append(name)
        return cls(parents, {k: tuple(sorted(v)) for k, v in children.items()}, strays, loops)

    @property
    def flat(self) -> bool:
        """Every queue hangs under root (there is no hierarchy to follow)."""
        return all(parent == ROOT for parent in self.parents.values())

    def is_leaf(self, name: str) -> bool:
        return name != ROOT and name not in self.children

    def ancestors(self, name: str) -> tuple[str, ...]:
        """The queues above `name`, nearest first, root left out."""
        found = []
        at = self.parents.get(name, ROOT)
        while at != ROOT:
            found.append(at)
            at = self.parents[at]
        return tuple(found)

    def chain(self, name: str) -> tuple[str, ...]:
        """The queues from the top level down to `name` itself (root left out)."""
        return (*reversed(self.ancestors(name)), name)

    def path(self, name: str) -> str:
        """`root/ml/team-a`."""
        return ROOT if name == ROOT else "/".join((ROOT, *self.chain(name)))

    def depth(self, name: str) -> int:
        """0 for root, 1 for a top-level queue, and so on."""
        return 0 if name == ROOT else len(self.ancestors(name)) + 1

    def branches(self, one: str, other: str) -> tuple[str, str, int]:
        """Where `one` and `other` part: the queues on each side just below their lowest common
        ancestor, and that ancestor's depth (the deeper, the closer their kinship)."""
        mine, theirs = self.chain(one), self.chain(other)
        shared = 0
        while shared < min(len(mine), len(theirs)) and mine[shared] == theirs[shared]:
            shared += 1
        below = (
            mine[shared] if shared < len(mine) else one,
            theirs[shared] if shared < len(theirs) else other,
        )
        return below[0], below[1], shared

    def below(self, name: str) -> Iterator[str]:
        """Every queue under `name`, parents before their children."""
        for child in self.children.get(name, ()):
            yield child
            yield from self.below(child)

    def leaves_under(self, name: str) -> list[str]:
        return [queue for queue in self.below(name) if self.is_leaf(queue)]
