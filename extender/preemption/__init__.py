"""Lahar's own preemption and reclaim: for the gangs the fair order refused for want of capacity,
which whole gangs (or spare members) to evict (`plan`, `victims`). Pure: no I/O."""
