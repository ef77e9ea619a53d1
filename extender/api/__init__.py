"""Lahar's data: Kubernetes quantities and resource vectors, the Pod and Node fields policies read,
and the scheduler extender's wire types. Pydantic models and pure functions only; no I/O."""
