"""`lahar webhook`: the admission webhook for Lahar's own resources (Jobs, Queues, PodGroups,
never pods), served over TLS with certificates it manages itself."""
