"""The object a log line is about, as the `extra=` of the logging call: its kind, namespace and
name, and the gang and the queue it belongs to when known.

The JSON log format (`shell.logs`) writes these as fields of their own, so that a log pipeline
selects every line about one pod, gang, Job or queue without parsing messages; the text format
leaves them out, its messages name the object already. They live here, in the lowest layer,
because the lines that name objects are written in layers that may import nothing above them: the
bind action and the barrier (`actions`), the informers (`cache`), as well as the extender's
writers, the controller and the webhook.

All the fields travel as one record attribute, `SUBJECT`: a `LogRecord` has a `name` of its own
(the logger's), which `extra` may not overwrite. Keys are read as Lahar writes them: a namespaced
object's `namespace/name`, a cluster-scoped one's `name`, a gang's gang key (`namespace/name` for
a Volcano PodGroup, `namespace/resource/name` for a Coscheduling or native one: `GroupKind.key`),
whose namespace is its first part and name its last. A field not known is left out.
"""

from __future__ import annotations

from collections.abc import Mapping

SUBJECT = "subject"  # the LogRecord attribute holding the fields
FIELDS = ("kind", "namespace", "name", "gang", "queue")  # in the order a JSON line shows them

Extra = Mapping[str, Mapping[str, str]]


def about(kind: str, key: str, *, gang: str | None = None, queue: str | None = None) -> Extra:
    """The `extra` of a line about the object of `kind` whose key is `key`."""
    first, slash, rest = key.partition("/")
    namespace, name = (first, rest.rpartition("/")[2]) if slash else ("", first)
    fields = {"kind": kind, "namespace": namespace, "name": name, "gang": gang, "queue": queue}
    return {SUBJECT: {field: value for field, value in fields.items() if value}}


def about_pod(key: str, *, gang: str | None = None) -> Extra:
    return about("Pod", key, gang=gang)


def about_gang(key: str, *, queue: str | None = None) -> Extra:
    """A line about a gang: its PodGroup, of whichever kind (the gang key tells it)."""
    return about("PodGroup", key, gang=key, queue=queue)


def about_job(key: str) -> Extra:
    return about("Job", key)


def about_queue(name: str) -> Extra:
    return about("Queue", name, queue=name)
