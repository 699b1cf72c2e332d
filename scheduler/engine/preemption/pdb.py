"""PodDisruptionBudgets in preemption: which victims an eviction would push past their budget
(upstream's filterPodsWithPDBViolation), per node for one list and columnar for all candidates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..cluster_objects import PodDisruptionBudget
from ..labels import SelectorError, as_selector
from ..pods import PodSpec


def pdb_matches(pdb: PodDisruptionBudget, namespace: str, labels: dict[str, str], name: str) -> bool:
    """Whether evicting pod `name` spends `pdb`'s budget: same namespace, a selector that parses, is
    not empty and matches, and the pod not already in status.disruptedPods (the API server granted
    that one; counting it again would over-spend the budget)."""
    if pdb.namespace != namespace or not labels:  # a pod with no labels matches no budget
        return False
    try:
        selector = as_selector(pdb.selector)
    except SelectorError:
        return False  # an invalid selector matches nothing
    if selector.empty() or not selector.matches(labels):
        return False
    return name not in pdb.disrupted_pods


def split_by_pdb_violation(pods: Sequence[PodSpec], pdbs: Sequence[PodDisruptionBudget]
                           ) -> tuple[list[PodSpec], list[PodSpec]]:
    """As filterPodsWithPDBViolation: (violating, non-violating), each in the given order. Every
    matching budget is spent by each pod in turn; a pod that takes one below zero violates it."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating, fine = [], []
    for pod in pods:
        violated = False
        for i, pdb in enumerate(pdbs):
            if pdb_matches(pdb, pod.namespace, pod.labels, pod.name):
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


def violations(names: Sequence[str], groups: np.ndarray, group_keys: Sequence[tuple[str, dict[str, str]]],
               nodes_of: np.ndarray, pdbs: Sequence[PodDisruptionBudget]) -> np.ndarray:
    """Columnar split_by_pdb_violation for many nodes at once: pods are given already in each node's
    importance order, grouped by node (`nodes_of` non-decreasing per run); `groups` are the pods'
    (namespace, labels) codes. A pod violates a budget when the pods matching it up to and including
    itself on its node outnumber disruptionsAllowed."""
    n = len(groups)
    out = np.zeros(n, dtype=bool)
    if not pdbs or n == 0:
        return out
    # Start of each node's run, to count within the node.
    starts = np.flatnonzero(np.r_[True, nodes_of[1:] != nodes_of[:-1]]) if n else np.zeros(0, dtype=np.int64)
    run_of = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    for pdb in pdbs:
        # Selector matching per (namespace, labels) group, not per pod.
        used = np.unique(groups)
        group_ok = np.zeros(len(group_keys), dtype=bool)
        for code in used:
            namespace, labels = group_keys[code]
            group_ok[code] = pdb_matches(pdb, namespace, labels, "")
        match = group_ok[groups]
        if pdb.disrupted_pods and np.count_nonzero(match):
            for i in np.flatnonzero(match):
                if names[i] in pdb.disrupted_pods:
                    match[i] = False
        if not np.count_nonzero(match):
            continue
        spent = np.cumsum(match)
        before_run = np.r_[0, spent][starts][run_of]  # matches before this node's run
        out |= match & ((spent - before_run) > pdb.disruptions_allowed)
    return out
