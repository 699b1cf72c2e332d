"""What the audit says a node held at an instant, for the rewind's tests to compare against."""

from scheduler.models import Binding, DeletedPod, Pod


def audit_bound(at) -> dict[str, tuple[int, int]]:
    """node -> (cpu millis, memory bytes) of the Binding rows up to T whose pod was not deleted by T."""
    requests = {uid: (cpu, mem) for uid, cpu, mem in Pod.objects.values_list("uid", "req_cpu", "req_memory")}
    deleted = {}
    for uid, cpu, mem, when in DeletedPod.objects.values_list("uid", "req_cpu", "req_memory", "deleted_at"):
        requests[uid], deleted[uid] = (cpu, mem), when
    out: dict[str, tuple[int, int]] = {}
    for uid, name in Binding.objects.filter(bound_at__lte=at).values_list("pod_uid", "node_name"):
        if uid not in deleted or deleted[uid] > at:
            cpu, mem = out.get(name, (0, 0))
            out[name] = (cpu + requests[uid][0], mem + requests[uid][1])
    return out
