"""`lahar` entry point: builds the argument parser from the command-group modules and runs one.

Errors a user can act on (DevClusterError, KubeError, PolicyError) become one line on stderr and
exit code 2.

Installed twice, as `lahar` and as `kubectl-lahar`: kubectl runs an executable named
`kubectl-NAME` on PATH as `kubectl NAME`, so the program names itself after how it was invoked
(`kubectl lahar job list`); the commands are the same.

`--log-format text|json` and `--log-level` set up the log (`shell.logs`) for every command: given
before the command, or after it for the long-running ones (`serve`, `controller`, `webhook`),
whose `--help` shows them, as a container's `args` list them. `-v` is `--log-level=debug`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from extender import __version__
from extender.cli import (
    certs_cmd,
    controller_cmd,
    crds_cmd,
    demo_cmd,
    devcluster_cmd,
    explain_cmd,
    hypernodes_cmd,
    job_cmd,
    podgroup_cmd,
    policy_cmd,
    queue_cmd,
    serve_cmd,
    simulate_cmd,
    webhook_cmd,
    whatif_cmd,
)
from extender.devcluster import DevClusterError
from extender.framework.policy import PolicyError
from extender.kube import KubeError
from extender.shell import logs

PROGRAM = "lahar"
PLUGIN = "kubectl-lahar"  # the executable kubectl runs for `kubectl lahar`
LONG_RUNNING = ("serve", "controller", "webhook")


def program(argv0: str) -> str:
    """The program's name as the user invoked it: `kubectl lahar` through kubectl's plugin
    mechanism, else `lahar`."""
    return "kubectl lahar" if Path(argv0).stem == PLUGIN else PROGRAM


def add_log_flags(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """`--log-format` and `--log-level`; without `defaults`, a value is set only when given
    (a command's flags then leave the values given before the command in place)."""
    group = parser.add_argument_group("logging")
    group.add_argument(
        "--log-format",
        choices=logs.FORMATS,
        default="text" if defaults else argparse.SUPPRESS,
        help="text (default): one line a record; json: one JSON object a line, with the object "
        "the line is about (kind, namespace, name, gang, queue)",
    )
    group.add_argument(
        "--log-level",
        choices=tuple(logs.LEVELS),
        default="info" if defaults else argparse.SUPPRESS,
        help="the least severe level logged (default info); error is kept for Lahar being wrong",
    )


def build_parser(prog: str = PROGRAM) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Gang scheduling, fair queues and whole-job preemption for the stock "
        "kube-scheduler.",
    )
    parser.add_argument("--version", action="version", version=f"lahar {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log debug details (--log-level=debug)"
    )
    add_log_flags(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve_cmd.register(commands)
    controller_cmd.register(commands)
    webhook_cmd.register(commands)
    certs_cmd.register(commands)
    devcluster_cmd.register(commands)
    demo_cmd.register(commands)
    simulate_cmd.register(commands)
    whatif_cmd.register(commands)
    job_cmd.register(commands)
    queue_cmd.register(commands)
    podgroup_cmd.register(commands)
    explain_cmd.register(commands)
    crds_cmd.register(commands)
    hypernodes_cmd.register(commands)
    policy_cmd.register(commands)
    for name in LONG_RUNNING:
        add_log_flags(commands.choices[name], defaults=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    prog = program(sys.argv[0])
    args = build_parser(prog).parse_args(argv)
    logs.configure(args.log_format, "debug" if args.verbose else args.log_level)
    try:
        code: int = args.run(args)
    except (DevClusterError, KubeError, PolicyError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
