"""Which pods and PodGroups may never be evicted to make room for another gang, as Volcano reads it.

- `volcano.sh/preemptable` on a pod or a PodGroup (of any kind: Volcano's, Coscheduling's or the
  native one, whose metadata the gang model keeps): the annotation first, then the label; a value
  Go's `strconv.ParseBool` reads (`true`, `False`, `1`, `t`, ...) says it, one it cannot read
  says false (Volcano logs it and protects), absent says true.
- Volcano's conformance: a pod in the namespace `kube-system`, or of priorityClassName
  `system-cluster-critical` or `system-node-critical`, is never a victim.

`pod_protection` and `group_protection` say why one is protected, in a few words ("" when it may
be evicted); preemption (`preemption.victims`) reads them. Pure.
"""

from __future__ import annotations

from extender.api.objects import ObjectMeta, Pod

PREEMPTABLE = "volcano.sh/preemptable"
SYSTEM_NAMESPACE = "kube-system"
CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")

# Go's strconv.ParseBool, which Volcano reads the annotation with.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(text: str) -> bool | None:
    """`text` as Go's `strconv.ParseBool` reads it; None when it reads no boolean."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def _said(meta: ObjectMeta) -> str | None:
    """The value of `volcano.sh/preemptable`: the annotation's, else the label's (None: unset)."""
    value = meta.annotations.get(PREEMPTABLE)
    return value if value is not None else meta.labels.get(PREEMPTABLE)


def preemptable(meta: ObjectMeta) -> bool:
    """Whether the object's `volcano.sh/preemptable` lets it be evicted: absent, true; set,
    what it says; unreadable, false."""
    said = _said(meta)
    return said is None or parse_bool(said) is True


def _refusal(meta: ObjectMeta) -> str:
    """Why the object's `volcano.sh/preemptable` protects it ("" when it does not)."""
    value = _said(meta)
    if value is None:
        return ""
    read = parse_bool(value)
    if read is True:
        return ""
    if read is False:
        return f"{PREEMPTABLE}={value}"
    return f"{PREEMPTABLE}={value!r}, not a boolean (read as false)"


def conformance(pod: Pod) -> str:
    """Why Volcano's conformance rule protects the pod ("" when it does not)."""
    if pod.metadata.namespace == SYSTEM_NAMESPACE:
        return f"conformance: {SYSTEM_NAMESPACE}"
    if pod.spec.priority_class_name in CRITICAL_CLASSES:
        return f"conformance: {pod.spec.priority_class_name}"
    return ""


def pod_protection(pod: Pod) -> str:
    """Why the pod may never be evicted for another gang ("" when it may): its own
    `volcano.sh/preemptable`, or conformance."""
    said = _refusal(pod.metadata)
    if said:
        return f"{said} on pod {pod.metadata.name}"
    return conformance(pod)


def group_protection(meta: ObjectMeta) -> str:
    """Why no pod of the PodGroup with this metadata may be evicted ("" when they may): its
    `volcano.sh/preemptable` set to false, or unreadable."""
    said = _refusal(meta)
    return f"{said} on its PodGroup" if said else ""
