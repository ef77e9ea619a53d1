"""The extender's HTTP service (aiohttp): routes that translate the wire to action calls, health
and readiness, Prometheus metrics, and the lifecycle of the informers that feed the cache."""
