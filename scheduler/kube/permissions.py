"""Every API permission the kubernetes backend uses: one list for `kube check` and for deploy/'s RBAC.

As kube-scheduler's system:kube-scheduler role, reduced to what we call: read nodes, pods, namespaces,
services, replication controllers, replica sets and stateful sets, create
bindings, patch pod status, write events (events.k8s.io, and core events for older consumers),
and a Lease in our own namespace (a Role there, not cluster-wide).
"""

from __future__ import annotations

from dataclasses import dataclass

from .client import call


@dataclass(frozen=True)
class Permission:
    group: str
    resource: str  # "pods" or "pods/binding"
    verbs: tuple[str, ...]
    namespaced: bool = False  # True: in our own namespace only (a Role), else cluster-wide (a ClusterRole)

    @property
    def base(self) -> str:
        return self.resource.split("/", 1)[0]

    @property
    def subresource(self) -> str:
        return self.resource.split("/", 1)[1] if "/" in self.resource else ""


REQUIRED: tuple[Permission, ...] = (
    Permission("", "nodes", ("get", "list", "watch")),
    Permission("", "pods", ("get", "list", "watch", "delete")),  # delete: preemption's victims
    # What pod (anti-)affinity (namespace labels) and default topology spreading (selectors) read.
    Permission("", "namespaces", ("get", "list", "watch")),
    Permission("", "services", ("get", "list", "watch")),
    Permission("", "replicationcontrollers", ("get", "list", "watch")),
    Permission("apps", "replicasets", ("get", "list", "watch")),
    Permission("apps", "statefulsets", ("get", "list", "watch")),
    Permission("scheduling.k8s.io", "priorityclasses", ("get", "list", "watch")),
    Permission("policy", "poddisruptionbudgets", ("get", "list", "watch")),
    Permission("", "pods/binding", ("create",)),
    Permission("", "pods/status", ("patch",)),
    Permission("events.k8s.io", "events", ("create", "patch")),
    Permission("", "events", ("create", "patch")),
    Permission("coordination.k8s.io", "leases", ("get", "create", "update"), namespaced=True),
)


def rules(namespaced: bool) -> list[dict]:
    """The RBAC rules granting REQUIRED (ClusterRole rules, or with namespaced=True the Role's)."""
    return [{"apiGroups": [p.group], "resources": [p.resource], "verbs": list(p.verbs)}
            for p in REQUIRED if p.namespaced == namespaced]


@dataclass(frozen=True)
class Verdict:
    permission: Permission
    verb: str
    namespace: str  # "" = all namespaces
    allowed: bool
    reason: str = ""

    def describe(self) -> str:
        group = f' in API group "{self.permission.group}"' if self.permission.group else ""
        where = f'namespace "{self.namespace}"' if self.namespace else "all namespaces"
        return f"{self.verb} {self.permission.resource}{group} ({where})"

    def fix(self) -> str:
        kind = "Role" if self.permission.namespaced else "ClusterRole"
        return (f'add to the {kind}: apiGroups ["{self.permission.group}"], resources ["{self.permission.resource}"], '
                f'verbs ["{self.verb}"]')


def check(authorization_api, *, namespace: str) -> list[Verdict]:
    """One SelfSubjectAccessReview per verb of every required permission, as `kubectl auth can-i`."""
    verdicts = []
    for permission in REQUIRED:
        ns = namespace if permission.namespaced else ""
        for verb in permission.verbs:
            attributes = {"verb": verb, "group": permission.group, "resource": permission.base}
            if permission.subresource:
                attributes["subresource"] = permission.subresource
            if ns:
                attributes["namespace"] = ns
            review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                      "spec": {"resourceAttributes": attributes}}
            status = call(authorization_api.create_self_subject_access_review, review).get("status") or {}
            verdicts.append(Verdict(permission, verb, ns, bool(status.get("allowed")),
                                    status.get("reason") or status.get("evaluationError") or ""))
    return verdicts


__all__ = ["Permission", "REQUIRED", "Verdict", "check", "rules"]
