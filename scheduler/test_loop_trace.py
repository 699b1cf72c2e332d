"""What an attempt keeps of its decision (Attempt.trace), as SCHEDBOARD_TRACE says."""

import pytest
from django.test import override_settings

from scheduler.engine.explain import trace_filtered, trace_scores
from scheduler.models import Attempt
from scheduler.testing.loop import apply, drain, node, pod

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def cluster():
    apply(node("small", cpu="1"), node("tainted", cpu="8", spec={"taints": [{"key": "k", "effect": "NoSchedule"}]}),
          node("roomy-a", cpu="4"), node("roomy-b", cpu="8"))


def test_by_default_a_failed_attempt_keeps_which_plugin_rejected_each_node_and_a_scheduled_one_nothing_more():
    cluster()
    apply(pod("huge", cpu="16"), pod("fits", cpu="2"))
    drain()
    failed = Attempt.objects.get(pod_name="huge")
    assert trace_filtered(failed.trace) == {
        "small": [{"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]}],
        "roomy-a": [{"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]}],
        "roomy-b": [{"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]}],
        "tainted": [{"plugin": "TaintToleration", "reasons": ["node(s) had untolerated taint(s)"]}],
    }
    assert "scores" not in failed.trace
    scheduled = Attempt.objects.get(pod_name="fits")
    assert scheduled.trace == {} and scheduled.candidates  # the top candidates are kept as before


@override_settings(SCHEDBOARD_TRACE="all")
def test_traced_all_a_scheduled_attempt_keeps_every_candidates_scores_and_the_rejected_nodes():
    cluster()
    apply(pod("fits", cpu="2"))
    drain()
    attempt = Attempt.objects.get(pod_name="fits")
    scores = trace_scores(attempt.trace)
    assert set(scores) == {"roomy-a", "roomy-b"}
    assert trace_filtered(attempt.trace) == {
        "small": [{"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]}],
        "tainted": [{"plugin": "TaintToleration", "reasons": ["node(s) had untolerated taint(s)"]}],
    }
    # The top candidates the audit always keeps are the same numbers.
    for row in attempt.candidates:
        assert scores[row["node"]] == {"plugins": row["plugins"], "total": row["total"]}
    assert attempt.node_name == attempt.candidates[0]["node"]


@override_settings(SCHEDBOARD_TRACE="off")
def test_traced_off_an_attempt_keeps_only_the_reason_counts():
    cluster()
    apply(pod("huge", cpu="16"))
    drain()
    attempt = Attempt.objects.get(pod_name="huge")
    assert attempt.trace == {}
    assert attempt.reasons == {"Insufficient cpu": 3, "node(s) had untolerated taint(s)": 1}
