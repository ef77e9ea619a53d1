"""`lahar` entry point: builds the argument parser from the command-group modules and runs one.

Errors a user can act on (DevClusterError, KubeError, PolicyError) become one line on stderr and
exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

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
)
from extender.devcluster import DevClusterError
from extender.framework.policy import PolicyError
from extender.kube import KubeError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lahar",
        description="Gang scheduling, fair queues and whole-job preemption for the stock "
        "kube-scheduler.",
    )
    parser.add_argument("--version", action="version", version=f"lahar {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve_cmd.register(commands)
    controller_cmd.register(commands)
    webhook_cmd.register(commands)
    certs_cmd.register(commands)
    devcluster_cmd.register(commands)
    demo_cmd.register(commands)
    simulate_cmd.register(commands)
    job_cmd.register(commands)
    queue_cmd.register(commands)
    podgroup_cmd.register(commands)
    explain_cmd.register(commands)
    crds_cmd.register(commands)
    hypernodes_cmd.register(commands)
    policy_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.run(args)
    except (DevClusterError, KubeError, PolicyError) as error:
        print(f"lahar: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lahar: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
