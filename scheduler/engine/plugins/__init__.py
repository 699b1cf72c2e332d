"""kube-scheduler's in-tree plugins, one module each, and the registry that names them."""

from functools import cache
from importlib import import_module

# Upstream plugin name -> module in this package (the class has the plugin's name).
_MODULES = {
    "NodeUnschedulable": "node_unschedulable",
    "NodeName": "node_name",
    "TaintToleration": "taint_toleration",
    "NodeAffinity": "node_affinity",
    "NodePorts": "node_ports",
    "NodeResourcesFit": "node_resources_fit",
    "NodeResourcesBalancedAllocation": "balanced_allocation",
    "ImageLocality": "image_locality",
    "PodTopologySpread": "pod_topology_spread",
    "InterPodAffinity": "inter_pod_affinity",
    "DefaultPreemption": "default_preemption",  # PostFilter
}

PLUGIN_NAMES = tuple(_MODULES)


@cache
def plugin_class(name: str) -> type:
    """The class implementing upstream plugin `name`; KeyError for a plugin we do not model."""
    module = import_module(f"{__name__}.{_MODULES[name]}")
    return getattr(module, name)
