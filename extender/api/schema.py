"""How a model field appears in Lahar's CRDs beyond its Python type: the `Crd` marker, read by
`api.crds` (which writes the CRDs' OpenAPI schemas from the models) and ignored by pydantic.

A field's Python type gives the schema's type (`int` an integer, `Literal[...]` an enum, a model an
object, `dict[str, X]` a map, `ResourceList` an int-or-string map); `Field(ge=...)` its minimum; a
field without a default is required; its docstring is its description. What Python cannot say
is said with `Crd`: the integer's width (`Int32`), a time (`Time`), a CRD default, an enum the
model keeps open (a status phase is read as any string, so an unexpected one never makes an
object unreadable), a field the CRD requires that the model reads leniently, the lengths,
patterns, sizes and CEL rules the API server checks while the model reads any value (so that an
object stored under an older or looser CRD is still read, and the webhook words each refusal),
and the embedded Kubernetes types Lahar keeps whole (`Opaque`: a pod template, a PVC spec, a
label selector), which Kubernetes validates when the controller creates the objects.

The marker costs nothing at run time: pydantic keeps it in the field's metadata and validates as
if it were not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Crd:
    format: str | None = None  # int32, int64, date-time
    minimum: int | None = None  # beside pydantic's ge, for a bound only the CRD enforces
    maximum: int | None = None
    enum: tuple[str, ...] | None = None  # the values the CRD admits (the model may read any)
    default: Any = UNSET  # what the API server fills in when the field is missing
    required: bool = False  # the CRD requires it (the model reads an object without it)
    nullable: bool = False  # null is a value (kept), not the field's absence
    opaque: bool = False  # an embedded Kubernetes type: `type: object`, every field kept
    map_type: str | None = None  # x-kubernetes-map-type
    list_type: str | None = None  # x-kubernetes-list-type
    min_length: int | None = None  # of a string, as the CRD checks it (the model reads any)
    max_length: int | None = None
    pattern: str | None = None  # a string's pattern (ECMA 262, as the API server reads it)
    min_items: int | None = None  # of a list
    # x-kubernetes-validations: CEL rules on the value, each (rule, message)
    validations: tuple[tuple[str, str], ...] | None = None


Int32 = Annotated[int, Crd(format="int32")]
Int64 = Annotated[int, Crd(format="int64")]
Count = Annotated[int, Crd(format="int32", minimum=0)]  # a status count
Time = Annotated[str, Crd(format="date-time")]  # RFC 3339, as Kubernetes writes times
Duration = str  # a Go duration (`90s`, `1h30m`), as Kubernetes' metav1.Duration is written
Opaque = Annotated[dict[str, Any], Crd(opaque=True)]
