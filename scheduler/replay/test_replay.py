"""The replayer on hand-built traces (no database): queue semantics in virtual time, the metrics,
determinism, and MostAllocated against LeastAllocated on the same trace."""

import io
import json
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from scheduler.engine.config import default_config, load_config
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.pods import Container, PodSpec
from scheduler.kubectl.printers import KubectlError
from scheduler.replay import metrics
from scheduler.replay.run import replay_trace
from scheduler.replay.trace import TraceError, read_trace
from scheduler.testing.replay import FIT, node, pod, trace


def run(t, config=None, **kw):
    report = replay_trace(t, [("default", config or default_config())], **kw)
    return report["configs"][0]


def test_an_unschedulable_pod_waits_in_virtual_time_until_a_node_that_fits_is_added():
    t = trace([node("small", cpu="1")], [pod("big", cpu="2")],
              [{"t": 100.0, "kind": "node_add", "manifest": node("roomy", cpu="4")}])
    out = run(t)
    assert out["placements"] == {"default/big": "roomy"}
    # Arrived at 0, failed, sat in the unschedulable pool; the NodeAdd at 100 moved it (its 1 s backoff long over).
    assert out["time_to_bind_p50_s"] == 100.0 and out["attempts"] == 2


def test_a_pod_still_pending_says_why_with_upstreams_message_and_counts_as_fragmentation_when_only_the_split_stops_it():
    t = trace([node("a", cpu="2"), node("b", cpu="2")], [pod("x", cpu="1500m"), pod("y", cpu="1500m"), pod("z", cpu="1")])
    out = run(t)
    assert out["pending"] == 1 and out["scheduled"] == 2
    assert out["pending_reasons"] == {"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
                                      "2 No preemption victims found for incoming pod.": 1}
    # 0.5 CPU free on each node: a 1-CPU pod fits the free total (1 CPU) but neither node.
    assert out["fragmentation"]["pods"] == 1 and out["fragmentation"]["cpu_millis"] == 1000


def test_deleting_a_bound_pod_frees_its_room_and_moves_the_waiting_pod_at_that_instant():
    t = trace([node("only", cpu="2")], [pod("old", cpu="2", node_name="only"), pod("new", cpu="2")],
              [{"t": 50.0, "kind": "pod_delete", "key": "default/old"}])
    out = run(t)
    assert out["placements"] == {"default/new": "only"} and out["time_to_bind_p50_s"] == 50.0


def test_a_pod_moved_to_backoff_q_is_popped_from_it_at_once_while_active_q_is_empty():
    # The pod fails at 0 while the node is cordoned; the node is uncordoned at 0.5, within the 1 s backoff
    # of its first attempt: the move sends it to backoffQ, and (SchedulerPopFromBackoffQ, on by default, as the
    # live queue) activeQ being empty it is popped from there at once and bound at 0.5.
    cordoned = node("n")
    cordoned["spec"] = {"unschedulable": True}
    t = trace([cordoned], [pod("p")], [{"t": 0.5, "kind": "node_update", "manifest": node("n")}])
    out = run(t)
    assert out["placements"] == {"default/p": "n"} and out["time_to_bind_p50_s"] == 0.5
    # A trace recorded with the gate off replays without it: bound when the backoff ends (just after 1.0).
    t = trace([cordoned], [pod("p")], [{"t": 0.5, "kind": "node_update", "manifest": node("n")}])
    t.header["feature_gates"] = {"SchedulerPopFromBackoffQ": False}
    out = run(t)
    assert out["placements"] == {"default/p": "n"} and out["time_to_bind_p50_s"] == pytest.approx(1.0)


def test_a_pod_waiting_for_affinity_is_moved_when_its_partner_binds_not_after_five_minutes():
    # "front" needs a pod labelled app=cache in its zone; none exists, so it waits unschedulable. The cache
    # pod arrives at 30 s and binds: AssignedPodAdd's InterPodAffinity hint moves front at that instant.
    front = pod("front")
    front["metadata"]["labels"] = {"app": "front"}
    front["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "cache"}}}]}}
    cache = pod("cache")
    cache["metadata"]["labels"] = {"app": "cache"}
    web = pod("web")
    web["metadata"]["labels"] = {"app": "web"}
    t = trace([node("a")], [front], [{"t": 10.0, "kind": "pod_add", "manifest": web},
                                     {"t": 30.0, "kind": "pod_add", "manifest": cache}])
    out = run(t)
    assert out["placements"] == {"default/front": "a", "default/cache": "a", "default/web": "a"}
    assert out["attempts"] == 4  # front twice (the web pod's binding did not move it), web and cache once


def test_removing_a_node_takes_its_pods_with_it():
    t = trace([node("a"), node("b")], [pod("on-a", node_name="a")], [{"t": 5.0, "kind": "node_delete", "name": "a"}])
    out = run(t)
    assert out["placements"] == {} and out["lost_with_node"] == 1


@pytest.fixture
def spread_trace(tmp_path):
    """Ten identical nodes, pods arriving over time: the case where packing and spreading part ways."""
    nodes = [node(f"n{i:02d}", cpu="8", memory="32Gi", zone=f"z{i % 3}") for i in range(10)]
    events = [{"t": float(i), "kind": "pod_add", "manifest": pod(f"p{i:03d}", cpu=["500m", "1", "2"][i % 3], memory="2Gi")}
              for i in range(40)]
    path = tmp_path / "trace.jsonl"
    with open(path, "w") as f:
        trace(nodes, [], events).dump(f)
    for strategy in ("MostAllocated", "LeastAllocated"):
        (tmp_path / f"{strategy}.yaml").write_text(FIT.format(strategy=strategy))
    return path


def replay_json(*args):
    out = io.StringIO()
    call_command("replay", *map(str, args), "--json", stdout=out)
    return json.loads(out.getvalue())


def test_most_allocated_packs_and_least_allocated_spreads_on_the_same_trace(spread_trace):
    d = spread_trace.parent
    report = replay_json(spread_trace, "--config", d / "MostAllocated.yaml", "--config", d / "LeastAllocated.yaml")
    most, least = report["configs"]
    assert (most["config"], least["config"]) == ("MostAllocated.yaml", "LeastAllocated.yaml")
    assert most["scheduled"] == least["scheduled"] == 40
    # Same requests in total: the same mean; packing leaves some nodes full and others empty.
    assert most["utilization"]["cpu"]["mean"] == pytest.approx(least["utilization"]["cpu"]["mean"])
    assert most["utilization"]["cpu"]["std"] > 3 * least["utilization"]["cpu"]["std"]
    assert most["utilization"]["memory"]["std"] > 3 * least["utilization"]["memory"]["std"]
    assert len(set(most["placements"].values())) < len(set(least["placements"].values())) == 10
    assert report["differ"] and set(report["differ"]) <= set(most["placements"])
    assert most["spread_skew"]["kubernetes.io/hostname"] > least["spread_skew"]["kubernetes.io/hostname"]


def test_the_json_report_has_the_trace_each_configurations_outcome_and_what_differs(spread_trace):
    d = spread_trace.parent
    report = replay_json(spread_trace, "--config", d / "MostAllocated.yaml", "--config", d / "LeastAllocated.yaml")
    assert {"trace", "configs", "differ"} <= report.keys()
    assert {"source", "nodes", "pods", "events", "duration_s", "seed", "recorded_bindings"} <= report["trace"].keys()
    for c in report["configs"]:
        assert {"config", "scheduled", "pending", "placements", "utilization", "fragmentation", "preemptions",
                "time_to_bind_p50_s", "time_to_bind_p99_s"} <= c.keys()
        assert {r: set(v) for r, v in c["utilization"].items()} == {"cpu": {"mean", "std"}, "memory": {"mean", "std"}}
        assert {"pods", "cpu_millis", "memory_bytes"} <= c["fragmentation"].keys()
        assert len(c["placements"]) == 40 and c["time_to_bind_p50_s"] <= c["time_to_bind_p99_s"]
    assert report["differ"] == sorted(k for k in report["configs"][0]["placements"]
                                      if report["configs"][0]["placements"][k] != report["configs"][1]["placements"][k])


@pytest.mark.parametrize("seed", ["-1", str(2**63)])
def test_a_seed_the_stream_cannot_take_is_refused_naming_the_option(spread_trace, seed):
    err = io.StringIO()
    with pytest.raises(KubectlError):
        call_command("replay", str(spread_trace), "--seed", seed, stderr=err, stdout=io.StringIO())
    assert err.getvalue() == f"error: --seed {seed}: must be between 0 and {2**63 - 1}\n"


def test_the_table_says_the_spread_skew_and_preemptions_of_each_configuration(spread_trace):
    d = spread_trace.parent
    out = io.StringIO()
    call_command("replay", str(spread_trace), "--config", str(d / "MostAllocated.yaml"),
                 "--config", str(d / "LeastAllocated.yaml"), stdout=out)
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("  spread skew")]
    assert len(lines) == 2 and all("kubernetes.io/hostname" in ln and "; preemptions 0" in ln for ln in lines)


def test_a_replay_is_deterministic_for_a_seed_and_the_seed_decides_the_ties(spread_trace):
    def placements(*args):
        return [c["placements"] for c in replay_json(spread_trace, *args)["configs"]]

    assert placements("--seed", "3") == placements("--seed", "3")
    assert placements("--seed", "3") != placements("--seed", "4")  # ten identical nodes: many ties


class WallClock:
    """monotonic() and sleep() for the pacer: sleeping moves it."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.now += seconds


@pytest.mark.parametrize("speed, expected_sleeps", [
    ("realtime", [2.0, 8.0]),   # virtual 2 s, then 10 s: wall follows one to one
    ("4", [0.5, 2.0]),          # four times real time
    ("0.5", [4.0, 16.0]),       # half
])
def test_speed_paces_virtual_time_against_the_wall_clock(speed, expected_sleeps):
    from scheduler.replay.simulator import pacer

    wall = WallClock()
    pace = pacer(speed, monotonic=wall.monotonic, sleep=wall.sleep)
    pace(2.0)
    pace(2.0)  # already there: no sleep
    pace(10.0)
    assert wall.slept == expected_sleeps


def test_speed_max_does_not_pace_and_a_bad_speed_is_refused_naming_the_option(spread_trace):
    from scheduler.replay.simulator import pacer

    assert pacer("max") is None
    for bad in ("0", "-2", "fast", "inf", "nan"):
        with pytest.raises(ValueError, match=rf"--speed '{bad}': expected max, realtime or a positive number"):
            pacer(bad)
    err = io.StringIO()
    with pytest.raises(KubectlError):
        call_command("replay", str(spread_trace), "--speed", "fast", stdout=io.StringIO(), stderr=err)
    assert "--speed 'fast'" in err.getvalue()


def without_wall_time(report):
    for c in report["configs"]:
        c.pop("wall_seconds", None)
    return report


def test_a_paced_replay_decides_as_the_unpaced_one(spread_trace):
    """Pacing only sleeps: 40 virtual seconds at 2,000 x real time, the same report as --speed max."""
    assert without_wall_time(replay_json(spread_trace, "--speed", "2000")) == without_wall_time(replay_json(spread_trace))


def test_an_object_added_mid_trace_counts_from_then_on():
    """A Service created in the window: from its instant, default spreading (PodTopologySpread's system
    defaults) counts the pods it selects, so packing gives way to spreading them; before it, nothing."""
    most = load_config(FIT.format(strategy="MostAllocated"), "most.yaml")
    nodes = [node("n1", cpu="8", memory="32Gi"), node("n2", cpu="8", memory="32Gi")]

    def web(i):
        m = pod(f"w{i}", cpu="500m")
        m["metadata"]["labels"] = {"app": "web"}
        return m

    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}}}
    arrivals = [{"t": float(i + 1), "kind": "pod_add", "manifest": web(i)} for i in range(8)]
    packed = run(trace(nodes, [], arrivals), config=most)
    assert len(set(packed["placements"].values())) == 1
    spread = run(trace(nodes, [], [{"t": 0.5, "kind": "object_add", "manifest": service}, *arrivals]), config=most)
    assert sorted(spread["placements"].values()) == ["n1"] * 4 + ["n2"] * 4
    late = run(trace(nodes, [], [*arrivals, {"t": 100.0, "kind": "object_add", "manifest": service}]), config=most)
    assert late["placements"] == packed["placements"]


def test_a_binding_the_live_run_saw_refused_is_refused_in_the_replay_and_the_pod_backs_off():
    t = trace([node("n1", cpu="4")], [], [{"t": 2.0, "kind": "pod_add", "manifest": pod("flaky", cpu="1")}])
    t.bind_failures = {"default/flaky": 1}
    out = run(t)
    assert out["bind_failures"] == 1 and out["placements"] == {"default/flaky": "n1"}
    # Refused at 2 (an error: podErrorBackoffQ, never popped early), its 1 s backoff ends in the window [3, 4):
    # the flush takes it at 4.
    assert out["attempts"] == 2 and out["time_to_bind_p50_s"] == 2.0
    text = '{"kind": "trace", "version": 1}\n{"kind": "bind_failures", "pods": {"default/flaky": -1}}\n'
    with pytest.raises(TraceError, match="t.jsonl:2: 'bind_failures' needs pods, a map of pod key to a count"):
        read_trace(text, "t.jsonl")


def test_a_pod_is_queued_when_the_live_loop_first_tried_it_and_what_happened_meanwhile_counts():
    """Created at 1.0, first tried live at 1.05; a deletion at 1.02 freed the room it needed then."""
    events = [{"t": 1.0, "kind": "pod_add", "manifest": pod("new", cpu="3"), "first_attempt_t": 1.05},
              {"t": 1.02, "kind": "pod_delete", "key": "default/old"}]
    t = trace([node("n1", cpu="4")], [pod("old", cpu="2", node_name="n1")], events)
    out = run(t)
    assert out["placements"] == {"default/new": "n1"} and out["attempts"] == 1
    assert out["time_to_bind_p50_s"] == pytest.approx(0.05)  # from its creation
    events[0].pop("first_attempt_t")  # without it: tried at 1.0, fails, waits for the deletion's move
    assert run(trace([node("n1", cpu="4")], [pod("old", cpu="2", node_name="n1")], events))["attempts"] == 2


def test_a_pod_is_tried_on_the_cluster_as_its_live_snapshot_read_it_not_as_at_its_attempts_start():
    """Created at 1.0, its live attempt started at 1.05 and read its snapshot at 1.06; a deletion at 1.055
    was in that snapshot: the replay applies it before the pod is tried."""
    events = [{"t": 1.0, "kind": "pod_add", "manifest": pod("new", cpu="3"), "first_attempt_t": 1.05,
               "first_snapshot_t": 1.06},
              {"t": 1.055, "kind": "pod_delete", "key": "default/old"}]
    cluster = ([node("n1", cpu="4")], [pod("old", cpu="2", node_name="n1")])
    out = run(trace(*cluster, events))
    assert out["placements"] == {"default/new": "n1"} and out["attempts"] == 1
    assert out["time_to_bind_p50_s"] == pytest.approx(0.06)  # from its creation
    events[0].pop("first_snapshot_t")  # without it: tried at 1.05, before the deletion, fails once
    assert run(trace(*cluster, events))["attempts"] == 2


def test_pods_the_live_loop_picked_up_together_are_tried_in_creation_order_not_by_name():
    """zz created at 1.0, aa at 1.01, both picked up at 1.5; room for one: the older takes it, as live."""
    events = [{"t": 1.0, "kind": "pod_add", "manifest": pod("zz", cpu="1"), "first_attempt_t": 1.5},
              {"t": 1.01, "kind": "pod_add", "manifest": pod("aa", cpu="1"), "first_attempt_t": 1.5}]
    out = run(trace([node("n1", cpu="1")], [], events))
    assert out["placements"] == {"default/zz": "n1", "default/aa": None}


def test_pods_that_failed_in_one_batch_come_back_in_the_order_they_were_tried_not_by_name():
    """shop/first and default/second (created in that order) fail together at 1.5; the deletion at 5 frees room
    for one. The live worker put them back one after another, so they pop again in that order: shop/first takes
    the room, as live (put back at one instant, the active queue would order them by name: default/ first)."""
    first = pod("first", cpu="1")
    first["metadata"]["namespace"] = "shop"
    events = [{"t": 1.0, "kind": "pod_add", "manifest": first, "first_attempt_t": 1.5},
              {"t": 1.01, "kind": "pod_add", "manifest": pod("second", cpu="1"), "first_attempt_t": 1.5},
              {"t": 5.0, "kind": "pod_delete", "key": "default/old"}]
    out = run(trace([node("n1", cpu="1")], [pod("old", cpu="1", node_name="n1")], events))
    assert out["placements"] == {"shop/first": "n1", "default/second": None}
    assert out["attempts"] == 4


def test_preemption_evicts_the_victim_that_started_last_as_the_live_snapshot_reads_start_times():
    """Two full nodes, each with one low-priority pod: "early" bound at 1 s, "late" at 5 s. An urgent pod at 10 s
    must evict one; upstream's pickOneNodeForPreemption prefers the node whose victims started latest, and the
    live snapshot reads a simulated pod's start as its binding time: so "late" goes, whatever the seed's offset
    among the candidates (a replayed pod that never started would read as starting now: a tie, the offset's)."""
    early, late = pod("early", cpu="2"), pod("late", cpu="2")
    early["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "a"}
    late["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "b"}
    urgent = pod("urgent", cpu="2")
    urgent["spec"]["priority"] = 1000
    t = trace([node("a", cpu="2"), node("b", cpu="2")], [], [
        {"t": 1.0, "kind": "pod_add", "manifest": early}, {"t": 5.0, "kind": "pod_add", "manifest": late},
        {"t": 10.0, "kind": "pod_add", "manifest": urgent}])
    for seed in range(8):
        out = run(t, seed=seed)
        assert out["evicted"] == ["default/late"] and out["placements"]["default/urgent"] == "b", seed
    # A pod bound before the trace starts: its status.startTime (the recorder writes its binding time there).
    started = [pod("early", cpu="2", node_name="a"), pod("late", cpu="2", node_name="b")]
    started[0]["status"] = {"startTime": "2026-12-01T10:00:05Z"}
    started[1]["status"] = {"startTime": "2026-12-01T10:00:01Z"}
    t = trace([node("a", cpu="2"), node("b", cpu="2")], started, [{"t": 10.0, "kind": "pod_add", "manifest": urgent}])
    assert all(run(t, seed=seed)["evicted"] == ["default/early"] for seed in range(8))


def test_a_name_bound_again_after_its_pod_was_deleted_counts_each_binding_in_order():
    """A StatefulSet's pod deleted and created again under its name: each binding is compared with the live one
    of the same turn (the first binding alone would count the second one as differing)."""
    again = pod("cache-0")
    again["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n2"}
    events = [{"t": 1.0, "kind": "pod_add", "manifest": pod("cache-0")},
              {"t": 1.1, "kind": "bound", "key": "default/cache-0", "node": "n1"},
              {"t": 5.0, "kind": "pod_delete", "key": "default/cache-0"},
              {"t": 6.0, "kind": "pod_add", "manifest": again},
              {"t": 6.1, "kind": "bound", "key": "default/cache-0", "node": "n2"}]
    nodes = [node("n1", cpu="8"), node("n2", cpu="4")]
    report = replay_trace(trace(nodes, [], events), [("default", default_config())])
    out = report["configs"][0]
    assert report["trace"]["recorded_bindings"] == 2
    assert (out["recorded_matches"], out["recorded_differs"]) == (2, [])
    events[-1]["node"] = "n1"
    out = run(trace(nodes, [], events))
    assert (out["recorded_matches"], out["recorded_differs"]) == (1, ["default/cache-0"])


def test_a_failed_pod_is_tried_again_when_the_live_loop_tried_it_again_not_at_its_backoffs_end():
    """Its binding refused at 2.0, its 1 s backoff ends in the window [3, 4), flushed at 4.0 (n1 is the emptier
    then); the live loop tried it again at 4.4 (its reconciler's tick), after a pod took 6 of n1's 8 CPUs at
    4.2: n2 then, as live."""
    events = [{"t": 2.0, "kind": "pod_add", "manifest": pod("flaky", cpu="1"), "retry_snapshot_t": [4.4]},
              {"t": 4.2, "kind": "pod_add", "manifest": pod("big", cpu="6"), "node": "n1"}]
    nodes = [node("n1", cpu="8"), node("n2", cpu="4")]
    t = trace(nodes, [], events)
    t.bind_failures = {"default/flaky": 1}
    out = run(t)
    assert out["placements"]["default/flaky"] == "n2" and out["attempts"] == 2
    events[0].pop("retry_snapshot_t")  # without it: tried again at its backoff's end, before the big pod
    t = trace(nodes, [], events)
    t.bind_failures = {"default/flaky": 1}
    assert run(t)["placements"]["default/flaky"] == "n1"


def test_a_pod_past_its_time_in_the_unschedulable_pool_is_tried_again_just_after_and_time_goes_on():
    """Failed at 1 s, the pool lets it go strictly after 301 s (upstream's `>`): the replay wakes just
    after, tries it (still no room), and goes on to the deletion at 500 s (it stopped the clock at 301 s)."""
    t = trace([node("n1", cpu="1")], [], [
        {"t": 0.0, "kind": "pod_add", "manifest": pod("a", cpu="1")},
        {"t": 1.0, "kind": "pod_add", "manifest": pod("b", cpu="1")},
        {"t": 500.0, "kind": "pod_delete", "key": "default/a"}])
    from scheduler.replay.simulator import Replayer

    replayer = Replayer(t, config=default_config(), name="default", seed=0)
    replayer.run()
    b = replayer.pods["default/b"]
    assert (b.attempts, b.node, b.bound_at) == (3, "n1", 500.0)


def test_a_kubectl_dump_of_nodes_and_pods_is_a_starting_state():
    dump = {"apiVersion": "v1", "kind": "List", "items": [
        node("a"), node("b"), {**pod("running", node_name="a"), "status": {"phase": "Running"}}, pod("waiting")]}
    t = read_trace(yaml.safe_dump(dump), "dump.yaml")
    assert [m["metadata"]["name"] for m in t.nodes] == ["a", "b"] and [n for _, n in t.pods] == ["a", None]
    out = run(t)
    assert out["placements"] == {"default/running": "a", "default/waiting": "b"}  # b is emptier
    assert out["scheduled"] == 1


DUMP = Path(__file__).parent / "testdata" / "kubectl-get-nodes-pods.yaml"  # as kubectl writes it: managedFields...


def test_a_real_kubectl_get_nodes_pods_dump_replays_as_is_and_through_record(tmp_path):
    """`kubectl get nodes,pods -A -o yaml` output (a List with status, managedFields, ownerReferences, a
    finished Job pod): replayed directly, or recorded first with `record --from-yaml`, the same start."""
    direct = replay_json(DUMP)
    out = io.StringIO()
    call_command("record", "--from-yaml", str(DUMP), "-o", str(tmp_path / "t.jsonl"), stdout=out)
    assert "recorded 5 lines: 2 nodes and 2 pods at the start, no events" in out.getvalue()
    recorded = replay_json(tmp_path / "t.jsonl")
    assert without_wall_time(direct)["configs"] == without_wall_time(recorded)["configs"]
    run = direct["configs"][0]
    # The Succeeded pod holds no room (kube-scheduler's informer leaves finished pods out): node-2 has 1 CPU
    # free, node-10 a taint api-0 does not tolerate, so api-0 waits, and says why.
    assert run["placements"] == {"shop/api-0": None, "shop/web-7d4b9c8f6d-x2k9p": "node-2"}
    assert run["nodes"]["names"] == ["node-2", "node-10"] and run["nodes"]["cpu"] == [0.75, 0.0]
    [reason] = run["pending_reasons"]
    assert reason.startswith("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint")


def test_replay_output_lists_nodes_and_pods_in_natural_order():
    t = trace([node(f"node-{i}", cpu="1") for i in (10, 2, 1)], [],
              [{"t": 0.0, "kind": "pod_add", "manifest": pod(f"p{i}", cpu="1")} for i in (10, 9, 1, 11)])
    out = run(t)
    assert out["nodes"]["names"] == ["node-1", "node-2", "node-10"]
    assert list(out["placements"]) == ["default/p1", "default/p9", "default/p10", "default/p11"]
    assert out["pending"] == 1


def test_a_dump_the_apply_decoder_refuses_is_refused_with_its_words():
    with pytest.raises(TraceError, match="cpu"):
        read_trace(yaml.safe_dump(pod("bad", cpu="lots")), "bad.yaml")


def test_recorded_mode_follows_the_recorded_configuration_switch_and_an_explicit_one_ignores_it():
    most = load_config(FIT.format(strategy="MostAllocated"), "most.yaml")
    from scheduler.engine.config import config_to_dict

    nodes = [node("a"), node("b")]
    events = [{"t": 1.0, "kind": "pod_add", "manifest": pod("p1")},
              {"t": 2.0, "kind": "config", "version": 2, "config": config_to_dict(most)},
              {"t": 3.0, "kind": "pod_add", "manifest": pod("p2")}]
    t = trace(nodes, [], events)
    t.header["config"] = {"version": 1, "config": config_to_dict(default_config())}
    recorded = replay_trace(t, [("recorded", None)], seed=1)["configs"][0]["placements"]
    explicit = replay_trace(t, [("default", default_config())], seed=1)["configs"][0]["placements"]
    assert recorded["default/p1"] == explicit["default/p1"]
    assert recorded["default/p2"] == recorded["default/p1"]  # MostAllocated from t=2: packs onto p1's node
    assert explicit["default/p2"] != explicit["default/p1"]  # LeastAllocated throughout: spreads


def test_utilisation_is_requested_over_allocatable_per_node_with_population_std():
    table = NodeTable([NodeSpec("a", allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110}),
                       NodeSpec("b", allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110})])
    table.add_pod(0, PodSpec(namespace="d", name="x", containers=(Container("c", requests={"cpu": 2000, "memory": 2 << 30}),)))
    u = metrics.utilization(table)
    assert u["cpu"] == {"mean": 0.25, "std": 0.25} and u["memory"] == {"mean": 0.125, "std": 0.125}


@pytest.mark.parametrize("field, value", [("t", -1), ("t", "soon"), ("first_attempt_t", "later"), ("first_attempt_t", True),
                                          ("first_snapshot_t", -0.5)])
def test_a_time_that_is_not_seconds_since_the_start_is_refused_naming_line_and_field(field, value):
    line = {"t": 1.0, "kind": "pod_add", "manifest": {}, field: value}
    text = '{"kind": "trace", "version": 1}\n' + json.dumps(line) + "\n"
    with pytest.raises(TraceError, match=rf"t.jsonl:2: {field} must be seconds since the start, got {value!r}"):
        read_trace(text, "t.jsonl")


@pytest.mark.parametrize("value", [[1.0, "later"], 2.0, [-1]])
def test_live_retry_times_that_are_not_a_list_of_seconds_are_refused_naming_line_and_field(value):
    line = {"t": 1.0, "kind": "pod_add", "manifest": {}, "retry_snapshot_t": value}
    text = '{"kind": "trace", "version": 1}\n' + json.dumps(line) + "\n"
    with pytest.raises(TraceError) as refused:
        read_trace(text, "t.jsonl")
    assert str(refused.value) == f"t.jsonl:2: retry_snapshot_t must be a list of seconds since the start, got {value!r}"


@pytest.mark.parametrize("kind, value", [("pod_add", [[7, 1]]), ("pod_add", [[7, -1, 0]]), ("pod", 3),
                                         ("pod", [[7, 1, True]])])
def test_live_draw_positions_that_are_not_seed_position_and_start_are_refused_naming_line_and_field(kind, value):
    line = {"t": 1.0, "kind": kind, "manifest": {}, "tiebreaks": value}
    text = '{"kind": "trace", "version": 1}\n' + json.dumps(line) + "\n"
    with pytest.raises(TraceError) as refused:
        read_trace(text, "t.jsonl")
    assert str(refused.value) == ("t.jsonl:2: tiebreaks must be a list of [seed, position, start index] (whole numbers) "
                                  f"or null, got {value!r}")


def test_a_trace_line_of_an_unknown_kind_is_refused_with_its_line_number():
    text = '{"kind": "trace", "version": 1}\n{"kind": "nope"}\n'
    with pytest.raises(TraceError, match=r"t.jsonl:2: unknown kind 'nope'"):
        read_trace(text, "t.jsonl")


def test_a_pod_of_higher_priority_preempts_lower_ones_and_gets_their_room():
    """DefaultPreemption is the default profile's PostFilter: the replay runs it, victims leave, the
    preemptor gets the room its nomination kept."""
    from scheduler.replay.metrics import run_report
    from scheduler.replay.simulator import Replayer

    low = [pod(f"low{i}", cpu="1") for i in range(4)]
    urgent = pod("urgent", cpu="2")
    urgent["spec"]["priority"] = 1000
    t = trace([node("only", cpu="4")], [], [
        *[{"t": float(i), "kind": "pod_add", "manifest": m} for i, m in enumerate(low)],
        {"t": 10.0, "kind": "pod_add", "manifest": urgent}])
    replayer = Replayer(t, config=default_config(), name="default", seed=0)
    assert [p.name for p in replayer.profiles["default-scheduler"].post_filters] == ["DefaultPreemption"]
    out = run_report(replayer.run())
    assert out["placements"]["default/urgent"] == "only"
    assert out["preemptions"] == 2 and out["preemptors"] == 1 and len(out["evicted"]) == 2
    assert out["placements"].keys() == {"default/urgent"} | {f"default/low{i}" for i in range(4)} - set(out["evicted"])
    # Failed (and nominated) at 10, its victims gone at once: their deletion moves it to backoffQ, and activeQ
    # being empty it is popped from there at once (SchedulerPopFromBackoffQ), into the kept room.
    urgent_run = replayer.pods["default/urgent"]
    assert (urgent_run.arrived, urgent_run.bound_at, urgent_run.attempts) == (10.0, 10.0, 2)


def test_preemption_picks_its_victims_node_from_the_seed_and_the_same_seed_picks_the_same():
    """Four equal full nodes: every one is an equal candidate, so upstream's random offset among them
    (getOffsetRand) decides; the replay seeds it, so a seed always evicts from the same node."""
    nodes = [node(f"n{i}", cpu="2") for i in range(4)]
    low = [pod(f"low{i}", cpu="2") for i in range(4)]
    urgent = pod("urgent", cpu="2")
    urgent["spec"]["priority"] = 1000
    t = trace(nodes, [], [*[{"t": 0.0, "kind": "pod_add", "manifest": m} for m in low],
                          {"t": 5.0, "kind": "pod_add", "manifest": urgent}])

    def urgent_node(seed):
        out = run(t, seed=seed)
        assert out["preemptions"] == 1 and out["scheduled"] == 4
        return out["placements"]["default/urgent"]

    chosen = [urgent_node(seed) for seed in range(8)]
    assert chosen == [urgent_node(seed) for seed in range(8)]
    assert len(set(chosen)) > 1


def test_a_gated_pod_is_never_attempted_in_a_replay():
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    out = run(trace([node("n", cpu="4")], [gated, pod("free")]))
    assert out["placements"] == {"default/free": "n", "default/gated": None}
    assert out["pending"] == 1 and out["attempts"] == 1, out.get("pending_reasons")
