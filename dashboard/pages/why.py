"""The "why pending, answered" section the pod and attempt pages include (templates/dashboard/_why_pending.html)."""

from __future__ import annotations

from scheduler.cluster.why import WhyError, pod_why


def why_section(namespace: str, name: str) -> dict | None:
    """The engine's answer for a pod still pending, now; None for a placed or deleted pod (nothing to answer)."""
    try:
        answer = pod_why(namespace=namespace, name=name)
    except WhyError as e:
        return None if str(e).endswith("not found") else {"error": str(e)}
    return None if "bound" in answer else answer
