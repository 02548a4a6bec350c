"""What the library tells an application about its work: OpenTelemetry spans
(:mod:`retrieval.observability.tracing`) and the servers' Prometheus metrics
(:mod:`retrieval.observability.metrics`)."""
