"""One scheduling cycle as a dry run over a cluster described in files: nothing is written anywhere."""

from __future__ import annotations

from ..engine.config import ConfigError, default_config, load_config
from ..engine.explain import explain, preemption
from ..engine.framework import Algorithm, Handle, run_post_filter_plugins
from ..engine.nodes import NodeTable, NodeUsage
from ..manifests.errors import ManifestError
from ..manifests.files import parse_files
from ..manifests.objects import ParsedNode, ParsedPod
from ..manifests.cluster_objects import ParsedObject
from ..state.placed_pods import cluster_objects_from_rows
from ..engine.disruption_budget import BudgetPod, budget_status
from ..manifests.cluster_objects import POD_DISRUPTION_BUDGET, PRIORITY_CLASS
from ..manifests.errors import Problem
from ..manifests.priority import admit_priority, priority_class_info
from ..manifests.stored import label_selector
from ..state.budgets import engine_budget


def admit_files(cluster_objs: list, target: ParsedPod) -> list[str]:
    """Priority admission for the files' pods, against the files' PriorityClasses (a pod that already
    carries spec.priority, as `kubectl get -o yaml` prints one, is checked against its class too)."""
    classes = {o.name: priority_class_info(o.manifest) for o in cluster_objs
               if isinstance(o, ParsedObject) and o.kind == PRIORITY_CLASS}
    lines = []
    for p in [o for o in cluster_objs if isinstance(o, ParsedPod)] + [target]:
        file, doc, prefix = p.origin
        for path, message in admit_priority(p, classes):
            lines.append(str(Problem(file, doc, "Pod", p.spec.key, f"{prefix}.{path}" if prefix else path, message)))
    return lines


def file_budgets(cluster_objs: list) -> list:
    """The files' PodDisruptionBudgets: their status.disruptionsAllowed when the file gives it (as
    `kubectl get -o yaml` prints one), else computed from the files' pods as the disruption controller would."""
    pods = [BudgetPod(o.spec.namespace, o.spec.name, o.spec.labels, bool(o.spec.node_name) and not o.spec.deleting,
                      (o.spec.controller.kind, o.spec.controller.name) if o.spec.controller else None)
            for o in cluster_objs if isinstance(o, ParsedPod)]
    scales = {(o.namespace, o.kind, o.name): o.replicas if o.replicas is not None else 1 for o in cluster_objs
              if isinstance(o, ParsedObject) and o.replicas is not None}
    out = []
    for o in cluster_objs:
        if not isinstance(o, ParsedObject) or o.kind != POD_DISRUPTION_BUDGET:
            continue
        status = o.manifest.get("status") or {}
        if "disruptionsAllowed" not in status:
            owned = {(kind, name): n for (ns, kind, name), n in scales.items() if ns == o.namespace}
            status = {**status, **budget_status(o.manifest.get("spec") or {}, o.namespace,
                                                label_selector(o.selector) if o.selector else None, pods, owned)}
        out.append(engine_budget(o.namespace, o.name, o.selector, status))
    return out


class DryRunError(Exception):
    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def explain_files(*, cluster: str, pod: str, profile: str | None = None, scheduler_name: str | None = None,
                  seed: int | None = None, preempt: bool = False) -> dict:
    try:
        cluster_objs = parse_files([cluster])
        pod_objs = parse_files([pod])
    except ManifestError as e:
        raise DryRunError([str(p) for p in e.problems]) from None
    except OSError as e:
        raise DryRunError([f"{e.filename}: {e.strerror}"]) from None
    pods = [o for o in pod_objs if isinstance(o, ParsedPod)]
    if len(pods) != 1 or len(pod_objs) != 1:
        raise DryRunError([f"{pod}: expected exactly one Pod, found {len(pod_objs)} object(s)"])
    if profile:
        try:
            with open(profile, encoding="utf-8") as f:
                config = load_config(f.read(), profile)
        except OSError as e:
            raise DryRunError([f"{e.filename}: {e.strerror}"]) from None
        except UnicodeDecodeError as e:  # as `profiles import` says it
            raise DryRunError([f"{profile}: not UTF-8 text ({e.reason} at byte {e.start})"]) from None
        except ConfigError as e:
            raise DryRunError(str(e).splitlines()) from None
    else:
        config = default_config()
    problems = admit_files(cluster_objs, pods[0])
    if problems:
        raise DryRunError(problems)
    target = pods[0].spec
    name = scheduler_name or target.scheduler_name
    profiles = {p.scheduler_name: p for p in config.profiles}
    if name not in profiles:
        raise DryRunError([f"{pod}: spec.schedulerName: no profile named {name!r} (have: {', '.join(profiles)})"])
    result = explain_cycle(cluster_objs, target, profiles[name].build(), seed=seed, preempt=preempt)
    if target.scheduling_gates:  # kube-scheduler would not attempt it yet: the cycle is what follows their removal
        result["gates"] = list(target.scheduling_gates)
    return result


def explain_cycle(cluster_objs: list, target, profile, *, seed: int | None = None, preempt: bool = False) -> dict:
    """One cycle's explain JSON. With `preempt`, a pod that fits nowhere runs the profile's PostFilter as a dry
    run (nothing is evicted) and the JSON adds "nominated", "victims" and "preemption" (what was weighed); the
    message then ends with upstream's "preemption: ..." part."""
    nodes = [o.spec for o in cluster_objs if isinstance(o, ParsedNode)]
    usage = {n.name: NodeUsage() for n in nodes}
    for o in cluster_objs:
        if isinstance(o, ParsedPod) and o.spec.node_name in usage and not o.spec.deleting:
            usage[o.spec.node_name].add(o.spec)
    table = NodeTable(nodes, [usage[n.name] for n in nodes])
    # What PodTopologySpread and InterPodAffinity read: the pods on each node, and the namespaces,
    # services and controllers the files describe.
    table.pods.load((table.index[o.spec.node_name], o.spec) for o in cluster_objs
                    if isinstance(o, ParsedPod) and o.spec.node_name in table.index)
    table.objects = cluster_objects_from_rows((o.kind, o.namespace, o.name, o.labels, o.selector)
                                              for o in cluster_objs if isinstance(o, ParsedObject))
    table.objects.pdbs = file_budgets(cluster_objs)
    decision = Algorithm(seed).schedule(profile, target, table, all_nodes=True)
    if not preempt:
        return explain(decision, table)
    for plugin in profile.post_filters:
        if seed is not None and hasattr(plugin, "rng"):
            plugin.rng.seed(seed)  # the random offset among the candidates, reproducible as the tie-break
    if not decision.scheduled and not decision.error and profile.post_filters and decision.num_all_nodes:
        decision.post_filter = run_post_filter_plugins(Handle(profile), target, table, decision)
    out = explain(decision, table)
    outcome = preemption(decision)
    out["nominated"] = outcome["nominated"] if outcome else None
    out["victims"] = outcome["victims"] if outcome else []
    out["preemption"] = outcome
    return out
