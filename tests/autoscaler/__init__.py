"""A stand-in for Cluster Autoscaler, for tests against a real cluster (see `provisioner`)."""
