"""Problems with a manifest file, each placed by file, document, object and field path."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.engine import field


@dataclass
class Problem:
    file: str
    doc: int  # 1-based document number in the file; 0 for the file as a whole
    kind: str
    ns_name: str  # "default/web" for pods, "node-a" for nodes, "" if unknown
    path: str  # "spec.containers[0].resources.requests[cpu]"; "" for the document as a whole
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.doc:
            where += f": doc {self.doc}"
        if self.kind:
            where += f" ({self.kind} {self.ns_name})" if self.ns_name else f" ({self.kind})"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ManifestError(Exception):
    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def uid_taken(uid: str, owner: str) -> str:
    """The problem with a pod whose metadata.uid is already another pod's."""
    return field.duplicate(uid, f"already the uid of Pod {owner}")
