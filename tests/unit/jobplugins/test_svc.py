"""svc: the headless Service, the hosts ConfigMap (following the replicas), the NetworkPolicy,
and each pod's hostname, subdomain, hosts env and /etc/volcano mount."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, PluginObject, make_plugins
from tests.unit.jobplugins.pods import MakePod, all_containers, env_of, load_job

LABELS = {"volcano.sh/job-name": "tensorflow-benchmark", "volcano.sh/job-namespace": "ml"}


def svc(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"svc": list(args)})
    return plugin


def bodies(objects: list[PluginObject]) -> dict[str, dict[str, Any]]:
    built = {o.kind: o.build() for o in objects}
    for o in objects:
        assert (built[o.kind]["apiVersion"], built[o.kind]["kind"]) == (o.api_version, o.kind)
        assert built[o.kind]["metadata"]["name"] == o.name
        assert o.replace
    return built


def test_objects_of_the_tensorflow_job(tf_job: Job) -> None:
    objects = svc().objects(tf_job)
    assert [(o.kind, o.name) for o in objects] == [
        ("ConfigMap", "tensorflow-benchmark-svc"),
        ("Service", "tensorflow-benchmark"),
        ("NetworkPolicy", "tensorflow-benchmark"),
    ]
    built = bodies(objects)
    for body in built.values():
        assert body["metadata"]["namespace"] == "ml"
        assert body["metadata"]["labels"] == LABELS
        assert body["metadata"]["ownerReferences"] == [tf_job.owner_reference()]
    assert built["ConfigMap"]["data"] == {
        "ps.host": "tensorflow-benchmark-ps-0.tensorflow-benchmark",
        "VC_PS_HOSTS": "tensorflow-benchmark-ps-0.tensorflow-benchmark",
        "VC_PS_NUM": "1",
        "worker.host": "tensorflow-benchmark-worker-0.tensorflow-benchmark\n"
        "tensorflow-benchmark-worker-1.tensorflow-benchmark",
        "VC_WORKER_HOSTS": "tensorflow-benchmark-worker-0.tensorflow-benchmark,"
        "tensorflow-benchmark-worker-1.tensorflow-benchmark",
        "VC_WORKER_NUM": "2",
    }
    assert built["Service"]["spec"] == {
        "clusterIP": "None",
        "selector": LABELS,
        "publishNotReadyAddresses": False,
        "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}],
    }
    assert built["NetworkPolicy"]["spec"] == {
        "podSelector": {"matchLabels": LABELS},
        "ingress": [{"from": [{"podSelector": {"matchLabels": LABELS}}]}],
        "policyTypes": ["Ingress"],
    }


def test_arguments_publish_not_ready_and_drop_the_network_policy(tf_job: Job) -> None:
    objects = svc("--publish-not-ready-addresses", "--disable-network-policy").objects(tf_job)
    assert [o.kind for o in objects] == ["ConfigMap", "Service"]
    assert bodies(objects)["Service"]["spec"]["publishNotReadyAddresses"] is True


def test_the_config_map_follows_scaling(tf_job: Job) -> None:
    body = tf_job.model_dump(by_alias=True)
    body["spec"]["tasks"][1]["replicas"] = 3
    scaled = Job.model_validate(body)
    data = bodies(svc().objects(scaled))["ConfigMap"]["data"]
    assert data["VC_WORKER_NUM"] == "3"
    assert data["worker.host"].splitlines()[-1] == (
        "tensorflow-benchmark-worker-2.tensorflow-benchmark"
    )


def test_task_names_become_keys_and_fixed_hostnames_one_host() -> None:
    job = load_job(
        {
            "metadata": {"name": "j"},
            "spec": {
                "tasks": [
                    {"name": "param-server", "replicas": 2, "template": {"spec": {}}},
                    {
                        "name": "chief",
                        "replicas": 2,
                        "template": {"spec": {"hostname": "boss", "subdomain": "hq"}},
                    },
                    {"name": "idle", "replicas": 0, "template": {}},
                ]
            },
        }
    )
    assert bodies(svc().objects(job))["ConfigMap"]["data"] == {
        "param_server.host": "j-param-server-0.j\nj-param-server-1.j",
        "VC_PARAM_SERVER_HOSTS": "j-param-server-0.j,j-param-server-1.j",
        "VC_PARAM_SERVER_NUM": "2",
        "chief.host": "boss.hq",
        "VC_CHIEF_HOSTS": "boss.hq",
        "VC_CHIEF_NUM": "1",
        "idle.host": "",
        "VC_IDLE_HOSTS": "",
        "VC_IDLE_NUM": "0",
    }


@pytest.mark.parametrize(("task", "index"), [("ps", 0), ("worker", 1)])
def test_pod_gets_its_name_hosts_env_and_mount(
    tf_job: Job, make_pod: MakePod, task: str, index: int
) -> None:
    pod, spec = make_pod(tf_job, task, index)
    plugin = svc()
    plugin.mutate_pod(pod, tf_job, spec, index)
    plugin.mutate_pod(pod, tf_job, spec, index)  # twice: nothing repeated
    assert pod["spec"]["hostname"] == f"tensorflow-benchmark-{task}-{index}"
    assert pod["spec"]["subdomain"] == "tensorflow-benchmark"
    cm = "tensorflow-benchmark-svc"
    assert pod["spec"]["volumes"] == [{"name": cm, "configMap": {"name": cm}}]
    for c in all_containers(pod):
        assert c["volumeMounts"] == [{"name": cm, "mountPath": "/etc/volcano"}]
        assert env_of(c) == {
            name: {"configMapKeyRef": {"name": cm, "key": name}}
            for name in ("VC_PS_HOSTS", "VC_PS_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM")
        }


def test_a_template_hostname_and_subdomain_are_kept(tf_job: Job, make_pod: MakePod) -> None:
    pod, spec = make_pod(tf_job, "ps", 0)
    pod["spec"] |= {"hostname": "ps", "subdomain": "tf"}
    svc().mutate_pod(pod, tf_job, spec, 0)
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("ps", "tf")
