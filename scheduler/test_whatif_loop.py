"""What-if over attempts the real loop wrote: with the weights the pods ran with, every recorded
decision is reproduced (the stored scores and the re-weighting agree), and a new version's weights
move exactly the pods its scores say."""

import pytest
from django.test import override_settings

from scheduler.engine.config import ProfileConfig, SchedulerConfig, default_profile
from scheduler.models import Attempt
from scheduler.versions.services import config_version_create
from scheduler.versions.profiles import config_for_version
from scheduler.testing.loop import apply, drain, node, pod
from scheduler.versions.whatif import CHANGED, SAME, StoredAttempt, Target, what_if

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def run_pods():
    # Different sizes, so LeastAllocated and BalancedAllocation disagree between nodes.
    apply(node("wide", cpu="16", memory="8Gi"), node("tall", cpu="4", memory="64Gi"), node("even", cpu="8", memory="16Gi"))
    apply(*(pod(f"p{i}", cpu=f"{(i % 3) + 1}", memory=f"{(i % 4) + 1}Gi") for i in range(9)))
    drain()
    rows = Attempt.objects.filter(result="scheduled").order_by("id")
    assert rows.count() == 9
    return [StoredAttempt.from_row(r) for r in rows]


def ran_with(version, profile_name):
    return config_for_version(version).profile(profile_name)


@pytest.mark.parametrize("trace", ["off", "all"])
def test_the_weights_the_pods_ran_with_reproduce_every_decision(trace):
    with override_settings(SCHEDBOARD_TRACE=trace):
        attempts = run_pods()
    result = what_if(attempts, Target("version 0", config_for_version(0)), ran_with=ran_with)
    assert [r.verdict for r in result.results] == [SAME] * 9
    for r in result.results:
        assert all(c.old_total == c.new_total for c in r.candidates)  # stored totals = Σ normalized × weight
    assert result.exact_count == 9  # three nodes: the top 10 hold every feasible node


@override_settings(SCHEDBOARD_TRACE="all")
def test_a_saved_versions_weights_move_the_pods_its_stored_scores_say():
    attempts = run_pods()
    p = default_profile()
    balanced_x50 = ProfileConfig(**{**p.__dict__, "scores": [(n, 50 if n == "NodeResourcesBalancedAllocation" else w)
                                                             for n, w in p.scores]})
    version = config_version_create(config=SchedulerConfig([balanced_x50]), reason="balance above all")
    result = what_if(attempts, Target(f"version {version.number}", config_for_version(version.number)), ran_with=ran_with)
    # The expected answer, computed independently from the stored per-plugin scores.
    weights = dict(balanced_x50.scores)
    for r in result.results:
        totals = {c["node"]: sum(s["normalized"] * weights[name] for name, s in c["plugins"].items())
                  for c in r.attempt.candidates}
        best = max(totals.values())
        expected = SAME if totals[r.attempt.node_name] == best else CHANGED
        assert r.verdict == expected
        if expected == CHANGED:
            assert totals[r.new_node] == best
