"""The built-in simulated cluster: nodes and pods are database rows; binding always succeeds,
except where a pod asks for injected failures (for fault tests and demos)."""

from __future__ import annotations

# A pod annotated with this fails its first N binding attempts, like an API server that said no.
FAIL_BINDS_ANNOTATION = "schedboard.io/fail-binds"


class BindError(Exception):
    pass


class SimulatedBackend:
    name = "simulated"

    def bind(self, *, pod_manifest: dict, node_name: str, attempt_number: int, previous_bind_failures: int) -> None:
        """Raise BindError to refuse the binding; return to accept it."""
        annotations = (pod_manifest.get("metadata") or {}).get("annotations") or {}
        try:
            failures_wanted = int(annotations.get(FAIL_BINDS_ANNOTATION, "0"))
        except ValueError:
            failures_wanted = 0
        if previous_bind_failures < failures_wanted:
            raise BindError(f"injected binding failure {previous_bind_failures + 1} of {failures_wanted}")
