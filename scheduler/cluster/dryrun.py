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
    target = pods[0].spec
    name = scheduler_name or target.scheduler_name
    profiles = {p.scheduler_name: p for p in config.profiles}
    if name not in profiles:
        raise DryRunError([f"{pod}: spec.schedulerName: no profile named {name!r} (have: {', '.join(profiles)})"])
    return explain_cycle(cluster_objs, target, profiles[name].build(), seed=seed, preempt=preempt)


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
