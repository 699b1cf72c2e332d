"""A pending pod's parse, re-used for its next watch event when only its status, spec.nodeName or
metadata.resourceVersion changed: the event of its binding, or of a PodScheduled condition patched.

Parsing a watched pod again from scratch (manifests.objects.parse_object: a deep copy, every field validated)
was a third of the mirror's CPU per event, yet the event that follows our binding differs from the one before
only there. Of those fields the parse reads little: spec.nodeName (checked as a DNS-1123 subdomain) and, of the
status, what stored.status_fields reads. So when everything else is equal (one dict comparison, in C), the parse
of the event before with those fields read again is the parse of this one, field for field.
"""

from __future__ import annotations

import copy

from ..engine.k8s_validation import is_dns1123_subdomain
from ..manifests.objects import ParsedPod, _jsonable, parse_object
from ..manifests.stored import status_fields

# Pods whose last parse is kept; past it, pods are parsed in full. A Deployment's pod (env, probes, a projected
# token volume) kept costs about 11 KB (20,000 of them: 228 MB more in the replica, measured): 2,000 hold every
# pod between its arrival and its binding at the rates reached here, and a backlog of that many.
MAX_KEPT = 2_000
# What of metadata may change between two events whose parse is shared: the API server's bookkeeping.
_BOOKKEEPING = ("resourceVersion", "managedFields")


def _shared_part(manifest: dict) -> dict | None:
    """What two events of a pod must have equal for one parse to serve both: all but the status,
    spec.nodeName and metadata's bookkeeping."""
    meta, spec = manifest.get("metadata"), manifest.get("spec")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return None
    shared = {k: v for k, v in manifest.items() if k != "status"}
    shared["metadata"] = {k: v for k, v in meta.items() if k not in _BOOKKEEPING}
    shared["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
    return shared


def _with(target: dict, source: dict, key: str) -> None:
    """`target[key]` as parse_object would write it from `source` (JSON-safe), or absent as in `source`."""
    if key in source:
        target[key] = _jsonable(source[key])
    else:
        target.pop(key, None)


class PodParses:
    """parse_object for a watch's pod manifests (mirror.pod_manifest's), remembering pending pods' parses.

    Only pods not yet bound are kept (their binding event is the one expected), each until it is seen bound or
    deleted, and only when parse_object's defaults changed nothing of the part compared (what the API server
    sends: it has applied them), so that comparing the event as it came is comparing what was parsed.
    """

    def __init__(self, max_kept: int = MAX_KEPT):
        self.max_kept = max_kept
        self._kept: dict[tuple[str, str], ParsedPod] = {}
        self.reused = 0  # events parsed from the one before (tests, profiling)

    def parse(self, manifest: dict) -> ParsedPod | None:
        """The pod parsed as parse_object parses it; None if it is not a valid Pod (parse_object says why)."""
        key = _key(manifest)
        prior = self._kept.pop(key, None)
        shared = _shared_part(manifest)
        parsed = None
        if prior is not None and shared is not None and shared == _shared_part(prior.manifest):
            parsed = _reparsed(prior, manifest)
            if parsed is not None:
                self.reused += 1
        if parsed is None:
            o, parsed = parse_object(manifest)
            if parsed is None or o.kind != "Pod":
                return None
            if shared is None or shared != _shared_part(parsed.manifest):
                return parsed  # the defaults filled something in: compared as it came, it would never match
        if not parsed.spec.node_name and len(self._kept) < self.max_kept:
            self._kept[key] = parsed
        return parsed

    def forget(self, manifest: dict) -> None:
        """The pod left (deleted): its parse goes too."""
        self._kept.pop(_key(manifest), None)

    def retain(self, keys: set[tuple[str, str]]) -> None:
        """Keep only these pods' parses ((namespace, name)): a list's, parsed ahead by PodStore.prepare. A kept
        parse is re-used only for a manifest equal in all it read, so one from before the list is as good."""
        for key in [key for key in self._kept if key not in keys]:
            del self._kept[key]


def _key(manifest: dict) -> tuple[str, str]:
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _reparsed(prior: ParsedPod, manifest: dict) -> ParsedPod | None:
    """The parse of `manifest`, which differs from the one `prior` was parsed from only in the status,
    spec.nodeName and bookkeeping; None when its nodeName is not one the parse takes (the full parse says why)."""
    node_name = manifest["spec"].get("nodeName")
    if node_name is None:
        node_name = ""
    if not isinstance(node_name, str) or (node_name and is_dns1123_subdomain(node_name)):
        return None
    parsed = dict(prior.manifest)
    meta, spec = dict(parsed["metadata"]), dict(parsed["spec"])
    for key in _BOOKKEEPING:
        _with(meta, manifest["metadata"], key)
    _with(spec, manifest["spec"], "nodeName")
    _with(parsed, manifest, "status")
    parsed["metadata"], parsed["spec"] = meta, spec
    # The prior spec with those fields replaced. Not dataclasses.replace: its __init__ computes the requests and
    # host ports again from the containers, which are the same (a fifth of a re-used parse); copied, not shared.
    pod = copy.copy(prior.spec)
    pod.node_name = node_name
    for name, value in status_fields(parsed).items():
        setattr(pod, name, value)
    pod.requests, pod.nonzero_requests = dict(pod.requests), dict(pod.nonzero_requests)
    return ParsedPod(spec=pod, manifest=parsed)
