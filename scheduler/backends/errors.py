"""What a backend's bind can answer besides success (the loop acts on each)."""


class BindError(Exception):
    """The binding was refused or failed: release the reservation, retry the pod with backoff."""


class BoundElsewhere(BindError):
    """The pod is already bound to another node (409): drop it from the queue, release our reservation."""

    def __init__(self, node_name: str):
        self.node_name = node_name
        super().__init__(f"pod is already bound to node {node_name!r}")


class PodGone(BindError):
    """The pod was deleted while in flight (404): forget it."""


class BindOutcomeUnknown(BindError):
    """No answer said whether the binding happened (no reply, a timeout, the server's own trouble) and asking
    again did not settle it before the binding's deadline: the reservation is kept, marked binding, until
    the cluster's watch says where the pod is or the binding timeout frees it. Releasing it now could give
    its room to another pod while the cluster has in fact bound this one there."""
