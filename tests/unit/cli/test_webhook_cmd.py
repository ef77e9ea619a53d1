"""`lahar webhook`'s flags: the schedulers it serves (`--scheduler-name`, repeatable, default the
profiles Lahar ships; the first is a Job's default) and the configurations it keeps."""

from __future__ import annotations

import pytest

from extender.admission.admit import Settings
from extender.cli.flags import scheduler_names
from extender.cli.main import build_parser
from extender.cli.webhook_cmd import configurations


def parsed(*flags: str) -> tuple[str, ...]:
    return scheduler_names(build_parser().parse_args(["webhook", *flags]), "webhook")


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        ((), ("lahar", "volcano")),
        (("--scheduler-name=lahar",), ("lahar",)),
        (("--scheduler-name=volcano", "--scheduler-name=lahar"), ("volcano", "lahar")),
        (
            ("--scheduler-name=lahar", "--scheduler-name=volcano", "--scheduler-name=coscheduling"),
            ("lahar", "volcano", "coscheduling"),
        ),
        (("--scheduler-name", "lahar", "--scheduler-name=lahar"), ("lahar",)),
        (("--served-scheduler=lahar", "--scheduler-name=batch"), ("lahar", "batch")),
    ],
    ids=["default", "one", "order-kept", "three", "repeat-dropped", "other-spelling"],
)
def test_the_schedulers_served(flags: tuple[str, ...], names: tuple[str, ...]) -> None:
    assert parsed(*flags) == names
    settings = Settings.serving(names)
    assert settings.scheduler_name == names[0]
    assert settings.served == frozenset(names)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Lahar", "must be lower case letters, digits, '-' and '.'"),
        ("", "must be lower case letters, digits, '-' and '.'"),
        ("x" * 254, "must be at most 253 characters (it is 254)"),
        ("la'har", "must be lower case letters"),
    ],
    ids=["upper-case", "empty", "too-long", "quote"],
)
def test_a_scheduler_name_that_is_not_a_dns_subdomain_is_refused_naming_the_flag(
    name: str, reason: str
) -> None:
    with pytest.raises(SystemExit) as refused:
        parsed(f"--scheduler-name={name}")
    message = str(refused.value)
    assert message.startswith(f"lahar webhook: --scheduler-name {name!r}: {reason}")
    assert message.endswith("(a schedulerName is a DNS subdomain)")


def test_the_help_says_the_default_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["webhook", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--scheduler-name NAME, --served-scheduler NAME" in text
    assert "default: lahar and volcano, the profiles of policy/kube-scheduler-config.yaml" in text


def test_both_configurations_are_kept() -> None:
    args = build_parser().parse_args(["webhook", "--webhook-configuration=mine"])
    assert configurations(args) == (
        ("MutatingWebhookConfiguration", "mine"),
        ("ValidatingWebhookConfiguration", "mine"),
    )
