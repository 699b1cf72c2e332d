"""A topology domain's page (`/nodes/domain/?key=..&value=..`): the nodes whose label `key` is `value`,
the pods bound or assumed on them, and every domain of that key with its counts, so a spread's skew or
an affinity's missing pods can be seen where they are. Linked from the nodes page's grouped heat map and
from the attempt page's topology explanation."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from scheduler.models import Node, Pod

# The well-known keys the nodes page offers to group by (kubernetes.io/hostname is one domain per node).
TOPOLOGY_KEYS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region", "kubernetes.io/hostname")
# Pods listed at once (their count is always exact).
MAX_PODS = 1000
MAX_KEY = 317  # a label key: a 253-character prefix, "/", a 63-character name


def domain_url(key: str, value: str) -> str:
    return "/nodes/domain/?" + urlencode({"key": key, "value": value})


def _label(labels, key: str):
    return labels.get(key) if isinstance(labels, dict) else None


def domains_of(key: str) -> tuple[list[dict], dict[str, list[dict]]]:
    """Every value of `key` among the nodes with its counts (nodes, bound and assumed pods, cpu
    requested / allocatable), and each value's nodes; nodes lacking the key are left out, as
    PodTopologySpread and InterPodAffinity leave them out of every domain."""
    bound = dict(Pod.objects.exclude(node_name="").values_list("node_name").annotate(n=Count("id")))
    assumed = dict(Pod.objects.filter(node_name="").exclude(assumed_node="")
                   .values_list("assumed_node").annotate(n=Count("id")))
    by_value: dict[str, list[dict]] = {}
    for name, labels, alloc_cpu, req_cpu, unschedulable in Node.objects.values_list(
            "name", "manifest__metadata__labels", "alloc_cpu", "req_cpu", "unschedulable").order_by("name"):
        value = _label(labels, key)
        if value is None:
            continue
        by_value.setdefault(str(value), []).append(
            {"name": name, "bound": bound.get(name, 0), "assumed": assumed.get(name, 0), "alloc_cpu": alloc_cpu,
             "req_cpu": req_cpu, "unschedulable": unschedulable})
    domains = []
    for value, nodes in sorted(by_value.items()):
        alloc = sum(n["alloc_cpu"] for n in nodes)
        req = sum(n["req_cpu"] for n in nodes)
        domains.append({"value": value, "url": domain_url(key, value), "nodes": len(nodes),
                        "bound": sum(n["bound"] for n in nodes), "assumed": sum(n["assumed"] for n in nodes),
                        "cpu": f"{req / 1000:g} / {alloc / 1000:g}", "cpu_pct": round(100 * req / alloc) if alloc else 0})
    return domains, by_value


@require_GET
def domain_detail(request):
    key = request.GET.get("key", "").strip()
    value = request.GET.get("value", "")
    if not key or len(key) > MAX_KEY or "value" not in request.GET:
        return render(request, "dashboard/domain.html",
                      {"problem": "Give a topology key and a value: /nodes/domain/?key=topology.kubernetes.io/zone&value=a",
                       "keys": TOPOLOGY_KEYS}, status=400)
    domains, by_value = domains_of(key)
    nodes = by_value.get(value, [])
    names = [n["name"] for n in nodes]
    on_nodes = Pod.objects.filter(node_name__in=names) | Pod.objects.filter(node_name="", assumed_node__in=names)
    total = on_nodes.count()
    pods = [{"namespace": ns, "name": name, "node": node or assumed, "state": "bound" if node else "assumed",
             "labels": ", ".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) if isinstance(labels, dict) else ""}
            for ns, name, node, assumed, labels in on_nodes.order_by("namespace", "name").values_list(
                "namespace", "name", "node_name", "assumed_node", "manifest__metadata__labels")[:MAX_PODS]]
    return render(request, "dashboard/domain.html", {
        "key": key, "value": value, "domains": domains, "nodes": nodes, "pods": pods, "pods_total": total,
        "pods_omitted": max(0, total - len(pods)), "keys": TOPOLOGY_KEYS,
        "group_url": "/nodes/?" + urlencode({"group": key}),
    })
