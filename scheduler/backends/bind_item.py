"""One placed pod on its way from its scheduling cycle to its binding cycle.

Upstream hands the assumed pod and its ScheduleResult from schedulingCycle to bindingCycle in memory; ours
cross a process boundary (a Celery job as JSON, or the Redis list to the kube leader), so a BindItem has a
wire form. Its keys are the ones the untyped dicts had, so jobs queued by an older worker still read.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..engine.queue import QueuedPodInfo

# Every field of a queue record is a plain value: read them directly (dataclasses.asdict copies each value
# recursively, a third of handing a batch of 256 to its bind task).
_INFO_FIELDS = tuple(f.name for f in fields(QueuedPodInfo))


@dataclass(frozen=True, slots=True)
class BindItem:
    attempt: int  # the Attempt row this binding completes
    pod: int  # the Pod row's id
    node: str  # the node its scheduling cycle chose (upstream's SuggestedHost)
    info: QueuedPodInfo  # its queue record as popped: a failed binding puts it back as it was
    cycle_seconds: float = 0.0  # the scheduling cycle's time, for scheduling_attempt_duration_seconds

    @property
    def key(self) -> str:
        return self.info.key

    def to_wire(self) -> dict:
        return {"attempt": self.attempt, "pod": self.pod, "node": self.node, "info": {name: getattr(self.info, name) for name in _INFO_FIELDS},
                "cycle_s": self.cycle_seconds}

    @classmethod
    def from_wire(cls, wire: dict) -> BindItem:
        return cls(attempt=wire["attempt"], pod=wire["pod"], node=wire["node"], info=QueuedPodInfo(**wire["info"]),
                   cycle_seconds=wire.get("cycle_s", 0.0))


def to_wire(items: list[BindItem]) -> list[dict]:
    return [item.to_wire() for item in items]


def from_wire(items: list[dict]) -> list[BindItem]:
    return [BindItem.from_wire(item) for item in items]
