"""Cluster state from list+watch: `state` (pure bookkeeping), `snapshot` (immutable views for one
decision) and `informer` (the list+watch loops that feed the state through the kube layer)."""
