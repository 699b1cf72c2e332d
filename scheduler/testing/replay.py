"""Builders of small traces for tests (of replay, its page and its browser test): never imported by production code."""

import io

from scheduler.replay.trace import Trace

FIT = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: {strategy}
        resources: [{{name: cpu, weight: 1}}, {{name: memory, weight: 1}}]
"""


def node(name, cpu="4", memory="8Gi", zone="z1"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name, cpu="1", memory="1Gi", node_name=None):
    spec = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def trace(nodes=(), pods=(), events=()):
    return Trace(header={"source": "test", "seed": None, "config": None},
                 nodes=list(nodes), pods=[(p, p["spec"].get("nodeName")) for p in pods], events=list(events))


def spread_trace_text(nodes: int = 6, pods: int = 18) -> str:
    """Identical nodes and 1-CPU pods arriving a second apart: where packing and spreading part ways."""
    out = io.StringIO()
    trace([node(f"n{i}", cpu="8", memory="32Gi") for i in range(nodes)], [],
          [{"t": float(i), "kind": "pod_add", "manifest": pod(f"p{i:02d}", cpu="1")} for i in range(pods)]).dump(out)
    return out.getvalue()
