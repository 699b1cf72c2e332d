"""Objects and the profile the topology tests share (PodTopologySpread and InterPodAffinity in the loop,
with real workers, and through the API server)."""

from scheduler.engine.config import default_config

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def topology_config():
    """The default profile: it has PodTopologySpread and InterPodAffinity in upstream's places."""
    return default_config()


def node(name, zone):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {HOST: name, ZONE: zone}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(name, labels=None, node_name="", **spec):
    body = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
            "spec": body}


def anti(key, **labels):
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": key, "labelSelector": {"matchLabels": labels}}]}}


def spread(key, max_skew=1, **labels):
    return [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": labels}}]
