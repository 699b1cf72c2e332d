"""A pod template as the API server stores it (pkg/apis/core/v1 defaults.go and the types' +default markers,
master): what the deployment controller reads back and hashes. Applied to a copy for the pod-template-hash;
the stored manifests stay as applied.

SetDefaults_PodSpec (dnsPolicy ClusterFirst, restartPolicy Always, an empty securityContext,
terminationGracePeriodSeconds 30, schedulerName default-scheduler), SetDefaults_Container (imagePullPolicy
Always for a :latest or untagged image, else IfNotPresent; terminationMessagePath /dev/termination-log,
terminationMessagePolicy File), SetDefaults_Probe (1 s timeout, 10 s period, thresholds 1 and 3),
SetDefaults_HTTPGetAction (path /, scheme HTTP), the volumes' default modes (0644), expirationSeconds 3600,
hostPath type "", an emptyDir for a volume with no source, fieldRef apiVersion v1, claim templates'
volumeMode Filesystem, every ResourceList rounded up to milli (SetDefaults_ResourceList), quantities in their
canonical form, and each field's +default marker (a port's protocol TCP, ...). SetDefaults_Pod's defaults
(requests from limits, enableServiceLinks, host-network ports) are the pod's only, not a template's."""

from __future__ import annotations

import copy
import json
import re

from .spew import Printer, canonical_quantity, layout

# The constants +default=ref(...) names.
_REFS = {"AzureDataDiskCachingReadWrite": "ReadWrite", "AzureSharedBlobDisk": "Shared"}


def _image_tag(image: str) -> str:
    """parsers.ParseImageName's tag: the one after the last path component's ':', "latest" with neither tag
    nor digest, "" with a digest only."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def _pod_spec(spec: dict) -> None:
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"


def _container(c: dict) -> None:
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if _image_tag(str(c.get("image") or "")) == "latest" else "IfNotPresent"
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"


def _probe(p: dict) -> None:
    for key, default in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                         ("failureThreshold", 3)):
        if not p.get(key):
            p[key] = default


def _http_get(h: dict) -> None:
    if not h.get("path"):
        h["path"] = "/"
    if not h.get("scheme"):
        h["scheme"] = "HTTP"


def _mode(v: dict) -> None:
    if v.get("defaultMode") is None:
        v["defaultMode"] = 420


def _volume(v: dict, types: dict) -> None:
    sources = [f[1] for f in types["core.VolumeSource"]["fields"]]
    if all(v.get(s) is None for s in sources):
        v["emptyDir"] = {}
    image = v.get("image")
    if isinstance(image, dict) and not image.get("pullPolicy"):
        image["pullPolicy"] = "Always" if _image_tag(str(image.get("reference") or "")) == "latest" else "IfNotPresent"


def _set(key: str, default):
    def apply(obj: dict) -> None:
        if obj.get(key) is None:
            obj[key] = default
    return apply


_DEFAULTS = {
    "core.PodSpec": lambda o, t: _pod_spec(o),
    "core.Container": lambda o, t: _container(o),
    "core.EphemeralContainer": lambda o, t: _container(o),
    "core.Probe": lambda o, t: _probe(o),
    "core.HTTPGetAction": lambda o, t: _http_get(o),
    "core.SecretVolumeSource": lambda o, t: _mode(o),
    "core.ConfigMapVolumeSource": lambda o, t: _mode(o),
    "core.DownwardAPIVolumeSource": lambda o, t: _mode(o),
    "core.ProjectedVolumeSource": lambda o, t: _mode(o),
    "core.ServiceAccountTokenProjection": lambda o, t: _set("expirationSeconds", 3600)(o),
    "core.HostPathVolumeSource": lambda o, t: _set("type", "")(o),
    "core.ObjectFieldSelector": lambda o, t: None if o.get("apiVersion") else o.__setitem__("apiVersion", "v1"),
    "core.PersistentVolumeClaimSpec": lambda o, t: _set("volumeMode", "Filesystem")(o),
    "core.Volume": _volume,
}


def _marker(text: str):
    if text.startswith("ref(") and text.endswith(")"):
        return _REFS.get(text[4:-1])
    return json.loads(text)


class _Defaulter:
    def __init__(self, types: dict, defaults: bool = True):
        self.types = types
        self.defaults = defaults  # False: quantities made canonical only (what a protobuf round trip does)
        self.printer = Printer(types)

    def walk(self, expr: str, value):
        """The value with every struct under it defaulted (its fields first, as the generated functions run the
        parent's SetDefaults before the children's only where they are independent)."""
        if value is None:
            return None
        if expr.startswith("*"):
            return self.walk(expr[1:], value)
        base = self.printer.underlying(expr)
        if base == "resource.Quantity":
            return canonical_quantity(value)
        if expr == "core.ResourceList" and isinstance(value, dict):
            return {k: canonical_quantity(v, milli=self.defaults) for k, v in value.items()}
        if base.startswith("[]") and isinstance(value, list):
            return [self.walk(base[2:], v) for v in value]
        if base.startswith("map[") and isinstance(value, dict):
            elem = re.sub(r"^map\[[^\]]*\]", "", base)
            return {k: self.walk(elem, v) for k, v in value.items()}
        t = self.types.get(expr)
        if t is None or t["kind"] != "struct" or not isinstance(value, dict):
            return value
        default = _DEFAULTS.get(expr) if self.defaults else None
        if default is not None:
            default(value, self.types)
        for _name, json_name, inline, ftype, marker in t["fields"]:
            if inline:
                self.walk(ftype, value)
                continue
            if json_name is None:
                continue
            if self.defaults and marker is not None and value.get(json_name) in (None, ""):
                default = _marker(marker)
                # A value field's zero default changes nothing; a pointer's makes it non-nil.
                if ftype.startswith("*") or default not in ("", 0, False):
                    value[json_name] = default
            if json_name in value:
                value[json_name] = self.walk(ftype, value[json_name])
        return value


def defaulted(template: dict, types: dict | None = None, *, defaults: bool = True) -> dict:
    """A copy of the template with the API server's defaults and canonical quantities (`defaults` False: the
    quantities only)."""
    types = types or layout()
    return _Defaulter(types, defaults).walk("core.PodTemplateSpec", copy.deepcopy(template))
