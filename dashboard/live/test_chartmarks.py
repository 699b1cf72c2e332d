"""The overview charts' markers without the DOM (static/dashboard/js/chartmarks.js), run by Node.js: a node's state
changes and the pods controllers took away (issue 16) become labelled marks on the throughput and latency charts."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[2] / "static" / "dashboard" / "js" / "chartmarks.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

WINDOW = 120


def call(function: str, *args):
    script = (f"import {{{function}}} from {json.dumps(MODULE.as_uri())};"
              f"console.log(JSON.stringify({function}(...{json.dumps(args)})));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def marks_after(*frames):
    marks = []
    for frame in frames:
        marks = call("addMarks", marks, frame, WINDOW)
    return [(m["t"], m["kind"], m["label"]) for m in marks]


def test_a_node_going_not_ready_then_its_evictions_are_two_marks_the_evictions_counted():
    frames = [
        {"t": 1010.2, "node_events": [["zone-a-0", "NotReady", 1010.1]]},
        {"t": 1310.5, "disruptions": [["default", f"web-{i}", "zone-a-0", "DeletionByTaintManager", 1310.3 + i / 100]
                                      for i in range(3)]},
    ]
    assert marks_after(*frames)[-1:] == [(1310.3, "pods", "3 pods evicted (taint) from zone-a-0")]
    assert marks_after(frames[0]) == [(1010.1, "node", "zone-a-0 NotReady")]


@pytest.mark.parametrize("reason, label", [
    ("DeletionByPodGC", "1 pod collected (PodGC) from zone-b-0"),
    ("EvictionByEvictionAPI", "1 pod evicted (drain) from zone-b-0"),
    ("TerminationByKubelet", "1 pod terminated (kubelet) from zone-b-0"),
    ("SomethingNew", "1 pod disrupted (SomethingNew) from zone-b-0"),
    ("", "1 pod disrupted from zone-b-0"),
])
def test_each_disruption_reason_has_its_label(reason, label):
    frame = {"t": 50.0, "disruptions": [["default", "web-0", "zone-b-0", reason, 49.5]]}
    assert marks_after(frame) == [(49.5, "pods", label)]


def test_disruptions_of_separate_seconds_nodes_or_reasons_are_separate_marks_and_a_pod_counts_once():
    frame = {"t": 20.0, "disruptions": [
        ["default", "a", "n1", "DeletionByPodGC", 10.1], ["default", "a", "n1", "DeletionByPodGC", 10.2],  # twice
        ["default", "b", "n1", "DeletionByPodGC", 10.9], ["default", "c", "n2", "DeletionByPodGC", 10.5],
        ["default", "d", "n1", "DeletionByPodGC", 11.0], ["default", "e", "n1", "EvictionByEvictionAPI", 10.3]]}
    assert marks_after(frame) == [
        (10.1, "pods", "2 pods collected (PodGC) from n1"), (10.3, "pods", "1 pod evicted (drain) from n1"),
        (10.5, "pods", "1 pod collected (PodGC) from n2"), (11.0, "pods", "1 pod collected (PodGC) from n1")]


def test_the_same_second_s_evictions_arriving_in_two_frames_add_up():
    first = {"t": 5.0, "disruptions": [["default", "a", "n1", "DeletionByTaintManager", 4.2]]}
    second = {"t": 5.5, "disruptions": [["default", "b", "n1", "DeletionByTaintManager", 4.7]]}
    assert marks_after(first, second) == [(4.2, "pods", "2 pods evicted (taint) from n1")]


def test_marks_older_than_the_window_are_dropped_and_a_node_event_is_not_repeated():
    old = {"t": 100.0, "node_events": [["n1", "Deleted", 99.0]]}
    again = {"t": 100.5, "node_events": [["n1", "Deleted", 99.0], ["n2", "Ready", 100.4]]}
    later = {"t": 99.0 + WINDOW + 1, "node_events": [["n3", "Unreachable", 99.0 + WINDOW + 0.5]]}
    assert marks_after(old, again) == [(99.0, "node", "n1 Deleted"), (100.4, "node", "n2 Ready")]
    assert marks_after(old, again, later) == [(100.4, "node", "n2 Ready"), (219.5, "node", "n3 Unreachable")]


def test_a_frame_without_events_keeps_the_marks_and_at_most_max_marks_are_kept():
    many = {"t": 10.0, "node_events": [[f"n{i}", "NotReady", 1.0 + i / 10] for i in range(60)]}
    assert call("addMarks", [], {"t": 0}, WINDOW) == []
    marks = marks_after(many, {"t": 11.0})
    assert len(marks) == 40 and marks[-1] == (6.9, "node", "n59 NotReady")


def test_a_full_frame_seeds_the_marks_with_the_recorded_ones_and_a_pod_both_recorded_and_live_counts_once():
    frame = {"t": 200.0, "full": True,
             "recent": {"marks": {"node_events": [["zone-a-0", "Unreachable", 100.2]],
                                  "disruptions": [["default", "web-0", "zone-a-0", "DeletionByTaintManager", 190.1]]}},
             "node_events": [], "disruptions": [["default", "web-0", "zone-a-0", "DeletionByTaintManager", 190.6],
                                                ["default", "web-1", "zone-a-0", "DeletionByTaintManager", 190.7]]}
    marks = call("seedMarks", frame, WINDOW)
    assert [(m["t"], m["kind"], m["label"]) for m in marks] == [
        (100.2, "node", "zone-a-0 Unreachable"), (190.1, "pods", "2 pods evicted (taint) from zone-a-0")]


def test_a_preemptions_victims_are_one_mark_that_says_they_were_preempted():
    frame = {"t": 2000.5, "disruptions": [["default", f"low-{i}", "node-b", "PreemptionByScheduler", 2000.1] for i in range(3)]}
    assert marks_after(frame) == [(2000.1, "pods", "3 pods preempted from node-b")]
