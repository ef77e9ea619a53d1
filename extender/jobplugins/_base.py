"""What a job plugin is, and how its arguments are read.

A plugin is pure: from the Job it derives the objects it keeps for the job (`objects`) and edits
each pod body before the controller creates it (`mutate_pod`). It never talks to the API server; the
controller applies what `objects` lists and records it in `status.controlledResources`.

Arguments are Volcano's: strings parsed the way Go's `flag` package parses them (`--name=value`,
`-name=value`, `--name value`, and a bare `--switch` meaning true), except that anything Volcano
would log and ignore — an unknown flag, a bad value, a stray positional argument — is a
`PluginError` naming the field `spec.plugins.<plugin>`, so the webhook can refuse the job.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from extender.api.batch import Job, TaskSpec

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_COUNTS = {2: "two", 3: "three", 4: "four"}


@dataclass(frozen=True)
class PluginObject:
    """An object a plugin keeps for a job (Service, ConfigMap, NetworkPolicy, Secret).

    `build` returns the full body (apiVersion, kind, metadata with name, namespace, labels and
    ownerReferences = [job.owner_reference()], then data or spec). It is called only when the
    controller needs the body, so a costly one (an ssh key pair) is made only when created.
    `replace`: True, the object is kept equal to `build()` (applied again when it changes, as the
    svc ConfigMap does on scaling); False, it is created once and never replaced (the ssh key pair
    must not change under running pods).
    """

    api_version: str
    kind: str
    name: str
    build: Callable[[], dict[str, Any]]
    replace: bool = True


class JobPlugin(Protocol):
    name: str

    def objects(self, job: Job) -> list[PluginObject]:
        """The objects this plugin keeps for the job; [] when it only edits pods."""
        ...

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        """Edit the body of pod `index` of `task` (metadata, spec with containers and
        initContainers) in place."""
        ...

    def problems(self, job: Job) -> list[PluginError]:
        """Why this plugin cannot run this job (a task it needs is missing); [] when it can. The
        webhook refuses the job with them; the controller fails a job that got in without it."""
        ...


class PluginError(ValueError):
    """A job's plugin Lahar cannot run: the message names the field `spec.plugins.<plugin>` and,
    for a bad argument, the flag (never a value that may be secret, such as a private key)."""

    def __init__(self, plugin: str, reason: str, argument: str | None = None) -> None:
        self.plugin = plugin
        self.argument = argument
        self.reason = reason
        self.field = f"spec.plugins.{plugin}"
        super().__init__(f"{self.field}: {reason}")


class Arguments:
    """One plugin's arguments, checked against the flags it declares: `switches` are booleans
    (false unless given), `options` take a value. A flag given twice keeps its last value, as in
    Go."""

    def __init__(
        self,
        plugin: str,
        args: Sequence[str] | None,
        *,
        switches: Collection[str] = (),
        options: Collection[str] = (),
    ) -> None:
        self.plugin = plugin
        self._known = {*switches, *options}
        self._switches: dict[str, bool] = dict.fromkeys(switches, False)
        self._options: dict[str, str] = {}
        argv = list(args or ())
        position = 0
        while position < len(argv):
            arg = argv[position]
            position += 1
            flag = arg[2:] if arg.startswith("--") else arg[1:]
            name, has_value, value = flag.partition("=")
            if not arg.startswith("-") or not name or name.startswith("-"):
                # Not echoed: a misplaced value may be a key.
                raise self.error(f"argument {position} is not --name[=value]")
            if name not in self._known:
                raise self.error(f"unknown argument --{name} (known: {self._listed()})", name)
            if name in self._switches:
                self._switches[name] = self._bool(name, value) if has_value else True
            elif has_value:
                self._options[name] = value
            elif position < len(argv):
                self._options[name] = argv[position]
                position += 1
            else:
                raise self.error(f"argument --{name} needs a value", name)

    def switch(self, name: str) -> bool:
        return self._switches[name]

    def text(self, name: str, default: str) -> str:
        return self._options.get(name, default)

    def roles(self, defaults: Mapping[str, str]) -> dict[str, str]:
        """The task names that flags give roles (flag -> default). No two may name the same task
        (a task cannot play two roles); an empty name matches no task, which leaves the role out,
        as in Volcano."""
        names = {flag: self.text(flag, default) for flag, default in defaults.items()}
        values = list(names.values())
        wrong = [f for f, value in names.items() if value and values.count(value) > 1]
        if wrong:
            flags = [f"--{f}" for f in names]
            listed = ", ".join(flags[:-1]) + " and " + flags[-1]
            count = _COUNTS.get(len(flags), str(len(flags)))
            culprit = next((f for f in wrong if self.given(f)), wrong[0])  # the one given
            raise self.error(f"{listed} must name {count} different tasks", culprit)
        return names

    def given(self, name: str) -> bool:
        return name in self._options

    def number(self, name: str, default: int, low: int, high: int) -> int:
        """A whole number in low..high."""
        text = self._options.get(name)
        if text is None:
            return default
        try:
            value = int(text, 10)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise self.error(
                f"--{name} must be a whole number in {low}..{high}, got {text!r}", name
            )
        return value

    def error(self, reason: str, argument: str | None = None) -> PluginError:
        return PluginError(self.plugin, reason, argument)

    def _bool(self, name: str, value: str) -> bool:
        if value in _GO_TRUE:
            return True
        if value in _GO_FALSE:
            return False
        raise self.error(f"--{name} must be true or false, got {value!r}", name)

    def _listed(self) -> str:
        return ", ".join(f"--{name}" for name in sorted(self._known)) or "none"
