"""`lahar whatif -f job.yaml --from SAVED.yaml`: the answer for a Job on a saved snapshot, as text
and as JSON; a Job the webhook refuses is refused with its message; a snapshot with no policy
beside it and a bad flag are one line naming what to pass."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.admission.admit import Settings, validate_job
from extender.api.run_times import RUN_TIME_ANNOTATION
from extender.cli.main import main
from tests.builders import JobBuilder, make_job, make_queue, make_review, make_trace, make_trace_job
from tests.unit.admission.helpers import Queues

LAHAR = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
TAKEN_AT = "2026-11-29T10:00:00Z"


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A snapshot saved with its policy beside it: gang default/old runs on both nodes, 400 s
    of an estimated 600-1800 (played 1000): it ends 200-1400 s from now, at 600 as played."""
    old = (
        make_trace_job("old")
        .task("w", 2, cpu="4", duration=1000)
        .bound("a", "b")
        .set(namespace="default", started=-400)
        .run_time(600, 1800)
    )
    trace = make_trace().set("takenAt", TAKEN_AT).nodes(names=["a", "b"], cpu="4").job(old)
    shutil.copy(LAHAR, tmp_path / "snap.policy.yaml")
    return trace.write(tmp_path / "snap.yaml")


def _job(run_time: str | None = "30m") -> JobBuilder:
    """Job new: two pods of 4 cpu (the two nodes' worth); its run time by annotation."""
    job = make_job("new").task("w", 2, cpu="4").min_available(2)
    return (
        job
        if run_time is None
        else job.set("metadata.annotations", {RUN_TIME_ANNOTATION: run_time})
    )


def _file(tmp_path: Path, body: dict[str, Any], name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _estimate(policy: Path) -> str:
    return (
        f"An estimate: the cluster's snapshot (taken at {TAKEN_AT}) played under the policy of "
        f"{policy}. It assumes no other Job arrives, no node fails or joins, and that gangs run "
        "as long as their run-time sources say."
    )


UNKNOWN_OWN = (
    "The Job's own run time is unknown (--run-time): it keeps its nodes to the end, so the "
    "delays it causes are the most it could cause."
)


@pytest.mark.parametrize(
    ("run_time", "flags", "unknown"),
    [
        ("30m", [], False),  # by its annotation
        (None, ["--run-time", "1h"], False),
        (None, [], True),  # no source: said under the notes
    ],
)
def test_the_answer_is_said_then_what_it_rests_on(
    saved: Path,
    capsys: pytest.CaptureFixture[str],
    run_time: str | None,
    flags: list[str],
    unknown: bool,
) -> None:
    job = _file(saved.parent, _job(run_time).build())
    assert main(["whatif", "-f", str(job), "--from", str(saved), *flags]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "Job default/new starts in about 10m (3m-23m), on a, b",
        "  after these end (run time source, estimated end):",
        "    default/old  (annotation, 3m-23m)",
        "",
        _estimate(saved.parent / "snap.policy.yaml"),
        "Run times of the gangs in the snapshot: 1 annotation.",
        *([UNKNOWN_OWN] if unknown else []),
    ]


def test_json_is_the_answer_for_scripts(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = _file(saved.parent, _job().build())
    assert main(["whatif", "-f", str(job), "--from", str(saved), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert err == ""
    assert body | {"notes": None} == {
        "takenAt": TAKEN_AT,
        "job": "default/new",
        "start": 600.0,
        "startRange": [200.0, 1400.0],
        "now": False,
        "nodes": ["a", "b"],
        "hyperNode": None,
        "after": [{"job": "default/old", "source": "annotation", "ends": [200.0, 1400.0]}],
        "evicts": [],
        "alsoEvicts": [],
        "delays": [],
        "neverWithThisPolicy": False,
        "reasons": [],
        "horizon": 86400.0,
        "notes": None,
        "warnings": [],
    }
    assert body["notes"][0] == _estimate(saved.parent / "snap.policy.yaml")


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            _job().min_available(5),
            "Job default/new is invalid: spec.minAvailable: 5 is more than the tasks' 2 replicas",
        ),
        (
            _job().queue("nope"),
            "Job default/new is invalid: spec.queue: queue 'nope' does not exist",
        ),
    ],
)
def test_a_job_the_webhook_refuses_is_refused_with_its_message(
    saved: Path, capsys: pytest.CaptureFixture[str], job: JobBuilder, message: str
) -> None:
    path = _file(saved.parent, job.build())
    assert main(["whatif", "-f", str(path), "--from", str(saved)]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"lahar whatif: {message}\n")
    webhook = validate_job(
        make_review(job.build()).request(), Queues(make_queue("default")), Settings()
    )
    assert webhook.message == message  # (what kubectl apply would print)


def test_a_file_that_is_not_one_job_is_refused(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    path = _file(saved.parent, config_map)
    assert main(["whatif", "-f", str(path), "--from", str(saved)]) == 1
    assert capsys.readouterr().err == (
        "lahar whatif: whatif takes one Volcano Job (batch.volcano.sh/v1alpha1, kind Job); the "
        "file holds ConfigMap (v1)\n"
    )


def test_a_snapshot_with_no_policy_beside_it_asks_for_current_policy(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _file(saved.parent, _job().build())
    alone = saved.parent / "alone.yaml"
    shutil.copy(saved, alone)
    with pytest.raises(SystemExit) as raised:
        main(["whatif", "-f", str(job), "--from", str(alone)])
    beside = saved.parent / "alone.policy.yaml"
    assert str(raised.value) == (
        f"lahar whatif: --from {alone}: no policy beside it ({beside}); pass --current-policy FILE"
    )
    assert (
        main(["whatif", "-f", str(job), "--from", str(alone), "--current-policy", str(LAHAR)]) == 0
    )
    assert _estimate(LAHAR) in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--run-time", "2x"], "lahar whatif: --run-time "),
        (["--run-time", "2h-1h"], "lahar whatif: --run-time "),
        (["--default-run-time", "soon"], "lahar whatif: --default-run-time "),
        (["--hours", "0"], "lahar whatif: --hours must be more than 0, got 0"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it(saved: Path, flags: list[str], said: str) -> None:
    job = _file(saved.parent, _job().build())
    with pytest.raises(SystemExit) as raised:
        main(["whatif", "-f", str(job), "--from", str(saved), *flags])
    message = str(raised.value)
    assert message.startswith(said) and "\n" not in message
    assert flags[1] in message  # (the value refused)


def test_a_queue_change_as_json_is_json_alone(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["whatif", "--from", str(saved), "--queue", "default.weight=2", "-o", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["runs"] == ["current", "new"]
    assert set(body) == {"runs", "sharePerHour", "levelShares", "starts", "evictions"}


def test_the_engines_log_level_is_as_it_was_after_the_command(saved: Path) -> None:
    """The command quiets the engine's virtual-time lines while it runs, and only then."""
    logger = logging.getLogger("extender")
    before = logger.level
    job = _file(saved.parent, _job().build())
    assert main(["whatif", "-f", str(job), "--from", str(saved)]) == 0
    assert logger.level == before
