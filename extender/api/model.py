"""The base of every Kubernetes model Lahar parses: camelCase on the wire, snake_case in Python.

The extender's cache holds every pod and node of the cluster, so what one parsed object costs is
multiplied by tens of thousands. Three things keep that small, all safe because models are frozen
(`benchmarks/memory.py`: 5,000 nodes and 50,000 pods took 569 MiB before them, 199 MiB after):
instances given the same fields share pydantic's record of which fields were given; `Shared`
models (a container, a toleration, a condition) are parsed once per distinct input and the one
instance is shared by every object that has it (a job's replicas have identical containers), from
a bounded cache; `Interned` strings (namespaces, node names, label keys and values) are stored
once however many objects name them.
"""

from __future__ import annotations

import sys
import threading
from typing import Annotated, Any, Self

from cachetools import LRUCache
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    model_validator,
)
from pydantic.alias_generators import to_camel

_SHARED: LRUCache[tuple[type, str], Any] = LRUCache(maxsize=8192)
_SHARED_LOCK = threading.Lock()  # models are parsed in worker threads too
_FIELDS_SETS: dict[tuple[type, frozenset[str]], set[str]] = {}


def _intern_mapping(value: dict[str, str]) -> dict[str, str]:
    return {sys.intern(key): sys.intern(item) for key, item in value.items()}


Interned = Annotated[str, AfterValidator(sys.intern)]
InternedMap = Annotated[dict[str, str], AfterValidator(_intern_mapping)]


class KubeModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields are ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    @model_validator(mode="after")
    def _share_fields_set(self) -> Self:
        # pydantic keeps, per instance, the set of field names the input gave (several hundred
        # bytes each). Models are frozen, so nothing adds to it in place (`model_copy` copies it
        # first): instances given the same fields share one set.
        given = self.__pydantic_fields_set__
        key = (type(self), frozenset(given))
        shared = _FIELDS_SETS.setdefault(key, given)
        if shared is not given:
            object.__setattr__(self, "__pydantic_fields_set__", shared)
        return self


class Shared(KubeModel):
    """A model parsed once per distinct input: equal inputs give the same (frozen) instance."""

    @model_validator(mode="wrap")
    @classmethod
    def _shared(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, dict):
            return handler(data)
        key = (cls, repr(data))
        with _SHARED_LOCK:
            found: Self | None = _SHARED.get(key)
        if found is None:
            found = handler(data)
            with _SHARED_LOCK:
                _SHARED[key] = found
        return found
