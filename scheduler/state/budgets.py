"""PodDisruptionBudgets as preemption reads them: the stored budgets with their status.

On the simulated cluster nothing else keeps a budget's status (there is no disruption controller),
so it is computed here from the pods, as upstream's controller would have it (engine/disruption_budget),
whenever the budgets are read: at apply, by `get pdb`, and by each scheduling batch when any budget
exists (one query over the budgets' namespaces; nothing at all when there is none). Budgets mirrored
from a Kubernetes cluster keep the status its controller wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from ..engine.cluster_objects import PodDisruptionBudget
from ..engine.disruption_budget import BudgetPod, budget_status
from ..manifests.stored import label_selector
from ..models import POD_DISRUPTION_BUDGET, REPLICA_SET, REPLICATION_CONTROLLER, STATEFUL_SET, ClusterObject, Pod

_CONTROLLERS = (REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER)


def _controller(manifest: dict) -> tuple[str, str] | None:
    for ref in (manifest.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return (str(ref.get("kind") or ""), str(ref.get("name") or ""))
    return None


def computed_statuses(rows: list[ClusterObject]) -> dict[int, dict]:
    """Budget row id -> its status as the disruption controller would compute it now."""
    if not rows:
        return {}
    namespaces = {r.namespace for r in rows}
    # Only the labels and owner references of each pod, never the whole manifest.
    pods = [BudgetPod(ns, name, labels if isinstance(labels, dict) else {},
                      bool(node) and not deleting and phase == Pod.RUNNING,
                      _controller({"metadata": {"ownerReferences": owners if isinstance(owners, list) else []}}))
            for ns, name, labels, owners, node, deleting, phase in Pod.objects.filter(namespace__in=namespaces)
            .values_list("namespace", "name", "manifest__metadata__labels", "manifest__metadata__ownerReferences",
                         "node_name", "deleting", "phase")]
    scales = {(ns, kind, name): replicas if replicas is not None else 1
              for ns, kind, name, replicas in ClusterObject.objects.filter(
                  namespace__in=namespaces, kind__in=_CONTROLLERS).values_list("namespace", "kind", "name", "replicas")}
    out = {}
    for r in rows:
        by_owner = {(kind, name): n for (ns, kind, name), n in scales.items() if ns == r.namespace}
        status = budget_status(r.manifest.get("spec") or {}, r.namespace, label_selector(r.selector), pods, by_owner)
        old = r.manifest.get("status") or {}
        out[r.pk] = {"observedGeneration": 1, **status, "disruptedPods": old.get("disruptedPods") or {}}
    return out


def computes_status() -> bool:
    """Whether this cluster's budgets get their status from us (the simulated one) or from its controller."""
    return settings.SCHEDBOARD_BACKEND == "simulated"


def with_status(rows: list[ClusterObject]) -> list[tuple[ClusterObject, dict]]:
    """The budgets with their current status."""
    if not computes_status():
        return [(r, r.manifest.get("status") or {}) for r in rows]
    statuses = computed_statuses(rows)
    return [(r, statuses[r.pk]) for r in rows]


def engine_budget(namespace: str, name: str, selector, status: dict) -> PodDisruptionBudget:
    disrupted = status.get("disruptedPods")
    return PodDisruptionBudget(namespace, name, label_selector(selector) if isinstance(selector, dict) else None,
                               int(status.get("disruptionsAllowed") or 0),
                               frozenset(disrupted) if isinstance(disrupted, dict) else frozenset())


def live_budgets() -> list[PodDisruptionBudget]:
    """Every stored budget as preemption reads it."""
    rows = list(ClusterObject.objects.filter(kind=POD_DISRUPTION_BUDGET))
    return [engine_budget(r.namespace, r.name, r.selector, status) for r, status in with_status(rows)]


class LazyBudgets(Sequence):
    """live_budgets(), read at the first look: a batch whose pods all fit never reads the budgets (only
    preemption does), so their status costs nothing then."""

    def __init__(self) -> None:
        self._items: list[PodDisruptionBudget] | None = None

    def _load(self) -> list[PodDisruptionBudget]:
        if self._items is None:
            self._items = live_budgets()
        return self._items

    def __getitem__(self, i):
        return self._load()[i]

    def __len__(self) -> int:
        return len(self._load())
