"""The controller's store: pods by job, evictions told once, staleness, pokes, PodGroups."""

from __future__ import annotations

import pytest

from extender.api.batch import Job, JobPod
from extender.api.job_groups import build_pod_group
from extender.controller.store import JobStore, OwnedGroup
from tests.builders import make_job, make_job_pod


def job(name: str = "a", version: int = 0, resource_version: str = "") -> Job:
    model = make_job(name).task("w", 2).status(phase="Running", version=version).model()
    meta = model.metadata.model_copy(update={"resource_version": resource_version})
    return model.model_copy(update={"metadata": meta})


def pod(owner: Job, index: int = 0, version: int | None = None, *, going: bool = False) -> JobPod:
    built = make_job_pod(owner, "w", index)
    built = built.version(version) if version is not None else built
    return (built.terminating() if going else built).model()


@pytest.fixture
def poked() -> list[str]:
    """The job keys the store poked, in order."""
    return []


@pytest.fixture
def store(poked: list[str]) -> JobStore:
    """A store knowing job default/a at version 1 (that poke not recorded)."""
    made = JobStore()
    made.upsert_job(job(version=1))
    made.on_change = poked.append
    return made


def test_pods_are_grouped_by_job_key(store: JobStore, poked: list[str]) -> None:
    other = make_job("b").ns("ml").task("w", 1).model()
    store.upsert_pod(pod(job(), 0))
    store.upsert_pod(pod(job(), 1))
    store.upsert_pod(make_job_pod(other, "w", 0).model())
    assert {key: sorted(pods) for key, pods in store.pods.items()} == {
        "default/a": ["a-w-0", "a-w-1"],
        "ml/b": ["b-w-0"],
    }
    assert poked == ["default/a", "default/a", "ml/b"]


def test_a_pod_deleted_by_someone_else_is_evicted_and_taken_once(
    store: JobStore, poked: list[str]
) -> None:
    evicted = pod(job(), version=1)
    store.upsert_pod(evicted)
    store.delete_pod(evicted)
    assert store.pods == {}
    assert store.take_evicted("default/a") == [evicted]
    assert store.take_evicted("default/a") == []
    assert poked == ["default/a", "default/a"]


def test_a_pod_the_controller_deleted_is_not_evicted(store: JobStore) -> None:
    mine = pod(job(), version=1)
    store.upsert_pod(mine)
    store.expect_deletion(mine.metadata.uid)
    store.upsert_pod(pod(job(), version=1, going=True))
    store.delete_pod(mine)
    assert store.take_evicted("default/a") == []


def test_a_terminating_pod_is_evicted_once_however_often_it_changes(store: JobStore) -> None:
    going = pod(job(), version=1, going=True)
    store.upsert_pod(going)
    store.upsert_pod(going)
    assert store.take_evicted("default/a") == [going]
    store.upsert_pod(going)
    store.delete_pod(going)
    assert store.take_evicted("default/a") == []


@pytest.mark.parametrize("going", [True, False], ids=["while terminating", "once deleted"])
def test_a_pod_of_an_older_version_is_not_evicted(store: JobStore, going: bool) -> None:
    old = pod(job(), version=0, going=going)
    store.upsert_pod(old)
    store.delete_pod(old)
    assert store.take_evicted("default/a") == []


def test_a_pod_of_a_job_not_listed_yet_is_noted(store: JobStore) -> None:
    """At start-up the pods may be listed before their job: an eviction is kept for the job's
    first reconcile (which drops it if the job is gone for good)."""
    stray = pod(job("later"))
    store.upsert_pod(stray)
    store.delete_pod(stray)
    assert store.take_evicted("default/later") == [stray]


def test_a_terminating_pod_found_at_start_up_is_evicted(store: JobStore) -> None:
    going, old = pod(job(), 0, version=1, going=True), pod(job(), 1, version=0, going=True)
    store.replace_pods([going, old])
    assert store.take_evicted("default/a") == [going]


def test_restored_evictions_are_seen_again_without_duplicates(store: JobStore) -> None:
    evicted = pod(job(), version=1)
    store.delete_pod(evicted)
    taken = store.take_evicted("default/a")
    store.restore_evicted("default/a", taken)
    store.restore_evicted("default/a", taken)
    assert store.take_evicted("default/a") == [evicted]


def test_a_deleted_job_drops_its_evictions(store: JobStore) -> None:
    store.delete_pod(pod(job(), version=1))
    store.delete_job(job(version=1))
    assert (store.jobs, store.take_evicted("default/a")) == ({}, [])


def test_a_stale_delete_does_not_remove_the_pod_made_again(store: JobStore) -> None:
    old = pod(job(), version=1)
    new = make_job_pod(job(version=1), "w", 0).uid("uid-new").model()
    store.upsert_pod(new)
    store.delete_pod(old)
    assert store.pods["default/a"]["a-w-0"].metadata.uid == "uid-new"


def test_a_pod_missing_from_a_relist_is_evicted(store: JobStore) -> None:
    evicted = pod(job(), version=1)
    store.replace_pods([evicted, pod(job(), 1, version=1)])
    store.replace_pods([pod(job(), 1, version=1)])
    assert store.take_evicted("default/a") == [evicted]


@pytest.mark.parametrize(
    ("written", "cached", "fresh"),
    [
        (None, "7", True),
        ("8", "7", False),
        ("8", "8", True),
        ("8", "9", True),
        ("not-a-number", "7", True),
        ("8", "", True),
    ],
    ids=[
        "nothing written",
        "the cache has not seen our write yet",
        "the cache shows our write",
        "the cache is past our write",
        "a resourceVersion that is no number is not tracked",
        "a cached job without a resourceVersion",
    ],
)
def test_fresh_until_the_cache_shows_what_was_written(
    written: str | None, cached: str, fresh: bool
) -> None:
    store = JobStore()
    store.upsert_job(job(resource_version=cached))
    if written is not None:
        store.wrote("default/a", written)
    assert store.fresh("default/a") is fresh


def test_a_deleted_job_forgets_what_was_written() -> None:
    store = JobStore()
    store.upsert_job(job(resource_version="7"))
    store.wrote("default/a", "8")
    store.delete_job(job())
    store.upsert_job(job(resource_version="1"))
    assert store.fresh("default/a")


def test_jobs_poke_their_keys(store: JobStore, poked: list[str]) -> None:
    store.upsert_job(job("b"))
    store.replace_jobs([job("b"), job("c")])
    store.delete_job(job("c"))
    assert poked[0] == "default/b"
    assert sorted(poked[1:4]) == ["default/a", "default/b", "default/c"]  # gone ones too
    assert poked[4:] == ["default/c"]
    assert set(store.jobs) == {"default/b"}


def test_a_relist_of_pods_pokes_the_jobs_before_and_after(
    store: JobStore, poked: list[str]
) -> None:
    store.replace_pods([pod(job())])
    store.replace_pods([make_job_pod(job("b"), "w", 0).model()])
    assert poked[0] == "default/a"
    assert sorted(poked[1:]) == ["default/a", "default/b"]


def group_of(owner: Job, *, controller: bool = True) -> OwnedGroup:
    """The PodGroup the controller makes for `owner`, read back (its owner reference not
    controlling, with `controller=False`)."""
    body = build_pod_group(owner)
    body["metadata"]["ownerReferences"][0]["controller"] = controller
    return OwnedGroup.model_validate(body)


def test_pod_groups_are_keyed_by_their_controlling_job(store: JobStore, poked: list[str]) -> None:
    store.upsert_group(group_of(job("a")))
    store.upsert_group(group_of(job("b"), controller=False))
    assert set(store.groups) == {"default/a"}
    found = store.group_of(job("a"))
    assert found is not None and found.spec.min_task_member == {"w": 2}
    store.replace_groups([group_of(job("c")), group_of(job("d"), controller=False)])
    assert set(store.groups) == {"default/c"}
    store.delete_group(group_of(job("c")))
    store.delete_group(group_of(job("x")))  # never known: no poke
    assert store.groups == {}
    assert (poked[0], sorted(poked[1:3]), poked[3:]) == (
        "default/a",
        ["default/a", "default/c"],
        ["default/c"],
    )


def namesake(name: str, uid: str) -> Job:
    """Job `name` created again: another uid (so another PodGroup name)."""
    model = job(name)
    return model.model_copy(update={"metadata": model.metadata.model_copy(update={"uid": uid})})


def test_the_pod_group_of_an_earlier_namesake_is_never_the_jobs(store: JobStore) -> None:
    """A job deleted and made again at once: the old PodGroup, which garbage collection has not
    removed yet, changes and goes without touching the new job's."""
    old, new = job("a"), namesake("a", "uid-a-again")
    store.upsert_group(group_of(new))
    store.upsert_group(group_of(old))  # the old one changes after the new one was made
    assert (store.group_of(new) or OwnedGroup()).metadata.name == "a-uid-a-again"
    store.delete_group(group_of(old))
    assert (store.group_of(new) or OwnedGroup()).metadata.name == "a-uid-a-again"
    assert store.group_of(old) is None
    store.delete_group(group_of(new))
    assert (store.group_of(new), store.groups) == (None, {})


def test_what_an_earlier_namesake_left_is_known_until_it_is_gone(store: JobStore) -> None:
    old, new = job("a"), namesake("a", "uid-a-again")
    lingering = make_job_pod(old, "w", 0).owned_by(old.metadata.uid).terminating().model()
    store.upsert_group(group_of(new))
    store.upsert_pod(make_job_pod(new, "w", 1).owned_by(new.metadata.uid).model())
    assert not store.namesake_left(new)
    store.upsert_pod(lingering)
    assert store.namesake_left(new) and list(store.pods_of(new)) == ["a-w-1"]
    store.delete_pod(lingering)
    store.upsert_group(group_of(old))
    assert store.namesake_left(new)
    store.delete_group(group_of(old))
    assert not store.namesake_left(new)


def test_a_pod_created_is_not_created_again_until_the_watch_shows_it(store: JobStore) -> None:
    owner = job(version=1)
    made = pod(owner, 0, version=1)
    store.expect_creation(owner, [made.name], now=100.0)
    assert store.creating(owner, made.name, now=101.0)
    store.upsert_pod(made)  # (the watch shows it: created again only if it goes)
    assert not store.creating(owner, made.name, now=101.0)
    store.expect_creation(owner, [made.name], now=102.0)  # (known already: nothing expected)
    assert not store.creating(owner, made.name, now=102.0)
    store.expect_creation(owner, ["a-w-1"], now=100.0)
    assert not store.creating(owner, "a-w-1", now=131.0)  # (never shown: tried again)
