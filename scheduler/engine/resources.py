"""Resource names, units and kube-scheduler's constants for them.

Units are kube-scheduler's: cpu in millicores, memory and ephemeral-storage in bytes,
pods as a count, extended resources as plain integers.
"""

from .field import INT64_MAX

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# Resources every node table carries a column for, whatever the nodes declare.
STANDARD_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)

# As pkg/scheduler/util: the requests assumed for a container that sets none, used for scoring only.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = INT64_MAX  # framework.MaxTotalScore (math.MaxInt64)


def is_extended_resource(name: str) -> bool:
    """As v1helper.IsExtendedResourceName: a prefixed name outside the kubernetes.io domain."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.")


def is_scalar_resource(name: str) -> bool:
    """Resources kube-scheduler tracks in Resource.ScalarResources: extended, hugepages and attachable volumes."""
    return name not in STANDARD_RESOURCES and (
        is_extended_resource(name)
        or name.startswith("hugepages-")
        or name.startswith("attachable-volumes-")
        or "kubernetes.io/" in name  # prefixed native resources are enforced too (fit_test.go)
    )
