"""The API server's admission for what users create (plugin/pkg/admission/defaulttolerationseconds): every
pod tolerates node.kubernetes.io/not-ready and /unreachable NoExecute for 300 s, unless it already has a
toleration for that taint (same key or an empty one, effect NoExecute or empty), which is left alone."""

from __future__ import annotations

from scheduler.engine.pods import Toleration

NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DEFAULT_NOT_READY_TOLERATION_SECONDS = 300
DEFAULT_UNREACHABLE_TOLERATION_SECONDS = 300


def default_toleration_seconds(manifest: dict) -> list[Toleration]:
    """Append the missing default tolerations to the (valid) pod manifest; the tolerations added."""
    spec = manifest.setdefault("spec", {})
    tolerations = [t for t in spec.get("tolerations") or () if isinstance(t, dict)]

    def tolerated(key: str) -> bool:
        return any((t.get("key") or "") in (key, "") and (t.get("effect") or "") in ("NoExecute", "")
                   for t in tolerations)

    added = []
    for key, seconds in ((NOT_READY, DEFAULT_NOT_READY_TOLERATION_SECONDS),
                         (UNREACHABLE, DEFAULT_UNREACHABLE_TOLERATION_SECONDS)):
        if not tolerated(key):
            added.append(Toleration(key=key, operator="Exists", effect="NoExecute", toleration_seconds=seconds))
    if added:
        spec["tolerations"] = list(spec.get("tolerations") or []) + [
            {"key": t.key, "operator": t.operator, "effect": t.effect, "tolerationSeconds": t.toleration_seconds}
            for t in added]
    return added
