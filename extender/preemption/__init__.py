"""Lahar's own preemption and reclaim: for the gangs the fair order refused for want of capacity,
which whole gangs (or spare members) to evict (`plan`, `victims`), and the loop that looks for
one preemption at a time (`loop`), its eviction, sleep and clock handed in. Pure: no I/O."""
