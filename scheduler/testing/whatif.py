"""A constructed what-if history, for tests: attempts whose candidates carry per-plugin scores with a known
answer under changed weights, and store() to put them in the database as Attempt rows."""

from datetime import timedelta

from django.utils import timezone

from scheduler.engine.config import default_profile
from scheduler.models import Attempt
from scheduler.versions.whatif import StoredAttempt

# TaintToleration 3, NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2, the others 1
DEFAULT_WEIGHTS = dict(default_profile().scores)


def scored(**normalized_by_plugin) -> dict:
    """A candidate's per-plugin entry as the loop stores it, every default plugin present (0 unless given)."""
    names = {"fit": "NodeResourcesFit", "image": "ImageLocality", "taint": "TaintToleration",
             "affinity": "NodeAffinity", "balanced": "NodeResourcesBalancedAllocation", "spread": "PodTopologySpread",
             "pods": "InterPodAffinity"}
    plugins = {}
    for plugin, weight in DEFAULT_WEIGHTS.items():
        short = next(k for k, v in names.items() if v == plugin)
        n = normalized_by_plugin.get(short, 0)
        plugins[plugin] = {"raw": n, "normalized": n, "weight": weight, "weighted": n * weight}
    return plugins


def candidate(node: str, **normalized) -> dict:
    plugins = scored(**normalized)
    return {"node": node, "plugins": plugins, "total": sum(p["weighted"] for p in plugins.values())}


def attempt(id_, node, candidates, *, feasible=None, trace=None, profile="default-scheduler", version=0):
    return StoredAttempt(id=id_, pod=f"default/p{id_}", node_name=node, profile_name=profile, profile_version=version,
                         candidates=candidates, trace=trace or {},
                         feasible_nodes=len(candidates) if feasible is None else feasible)


HISTORY = [
    # a: 100, b: 50 + 40 = 90 -> a won; with ImageLocality ×2: a 100, b 130 -> b.
    attempt(1, "a", [candidate("a", fit=100), candidate("b", fit=50, image=40)]),
    # b: 150, a: 80 -> b won; ×2: b 200, a 80 -> still b.
    attempt(2, "b", [candidate("b", fit=100, image=50), candidate("a", fit=80)]),
    # one feasible node: never scored, cannot move.
    attempt(3, "c", [{"node": "c", "total": None, "plugins": {}}]),
    # top 2 of 20 stored: a 100, c 90 -> a won; ×2: c 110 -> c (among the stored ones).
    attempt(4, "a", [candidate("a", fit=100), candidate("c", fit=70, image=20)], feasible=20),
    # a 80, b 70 -> a won; ×2: a 100, b 100 -> a tie that still includes a: same.
    attempt(5, "a", [candidate("a", fit=60, image=20), candidate("b", fit=40, image=30)]),
]


# a 100 wins; with ImageLocality ×2 b and c tie at 130 (a stays 100), or b, c and d tie.
TIE_OF_2 = attempt(11, "a", [candidate("a", fit=100), candidate("b", fit=50, image=40), candidate("c", fit=50, image=40)])


def store(history=HISTORY, *, start=None):
    """The constructed history as Attempt rows, oldest first (ids in the same order)."""
    start = start or timezone.now() - timedelta(minutes=10)
    rows = []
    for i, a in enumerate(history):
        ns, name = a.pod.split("/")
        rows.append(Attempt.objects.create(
            namespace=ns, pod_name=name, number=1, started_at=start + timedelta(seconds=i), result="scheduled",
            node_name=a.node_name, candidates=a.candidates, trace=a.trace, feasible_nodes=a.feasible_nodes,
            num_nodes=20, evaluated_nodes=20, profile_name=a.profile_name, profile_version=a.profile_version))
    return rows
