"""`manage.py explain`: one dry-run scheduling cycle over files, checked against golden outputs.

Each case is a folder under testdata/explain/ with cluster.yaml, pod.yaml, an optional profile.yaml
and either expected.json (stdout, exit 0) or expected.stderr (exit 1).
"""

import json
from pathlib import Path

import pytest

from scheduler.queue import queues
from scheduler.models import Attempt, Binding, ClusterEvent, Event, Node, Pod
from scheduler.testing.cli import cli, manage

pytestmark = pytest.mark.django_db(transaction=True)

CASES = Path(__file__).resolve().parent / "testdata" / "explain"
SEEDS = {"seed-tie-break": "7"}


def case_args(name: str) -> list[str]:
    case = CASES / name
    args = ["explain", "--cluster", "cluster.yaml", "--pod", "pod.yaml"]
    if (case / "profile.yaml").exists():
        args += ["--profile", "profile.yaml"]
    if name in SEEDS:
        args += ["--seed", SEEDS[name]]
    return args


@pytest.fixture
def in_case(monkeypatch):
    def enter(name):
        monkeypatch.chdir(CASES / name)
        return CASES / name
    return enter


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_explain_matches_its_golden_output(in_case, name):
    case = in_case(name)
    r = cli(*case_args(name))
    if (case / "expected.json").exists():
        assert (r.code, r.err) == (0, ""), r
        assert r.out == (case / "expected.json").read_text()
        assert set(json.loads(r.out)) == {"pod", "feasible", "filtered", "scores", "selected", "message"}
    else:
        assert (r.code, r.out) == (1, ""), r
        assert r.err == (case / "expected.stderr").read_text()


def test_default_profile_prefers_the_emptier_node_with_upstreams_scores(in_case):
    in_case("default")
    result = json.loads(cli(*case_args("default")).out)
    assert result["selected"] == "node-b" and result["message"] is None
    assert result["feasible"] == ["node-a", "node-b"]
    assert result["filtered"] == {"node-c": [{"plugin": "NodeUnschedulable", "reasons": ["node(s) were unschedulable"]}]}
    a, b = result["scores"]["node-a"]["plugins"], result["scores"]["node-b"]["plugins"]
    # LeastAllocated, as upstream's integer arithmetic: node-a cpu (4-3)*100/4=25, memory (8-3)*100/8=62 -> 43.
    assert (a["NodeResourcesFit"]["raw"], b["NodeResourcesFit"]["raw"]) == (43, 81)
    assert a["TaintToleration"] == {"raw": 0, "normalized": 100, "weight": 3, "weighted": 300}
    for scores in result["scores"].values():
        assert scores["total"] == sum(p["weighted"] for p in scores["plugins"].values())


def test_most_allocated_profile_changes_the_winner(in_case):
    in_case("most-allocated")
    with_profile = json.loads(cli(*case_args("most-allocated")).out)
    without = json.loads(cli("explain", "--cluster", "cluster.yaml", "--pod", "pod.yaml").out)
    assert (without["selected"], with_profile["selected"]) == ("node-b", "node-a")
    # MostAllocated: node-a cpu 3*100/4=75, memory 3*100/8=37 -> 56.
    assert with_profile["scores"]["node-a"]["plugins"]["NodeResourcesFit"]["raw"] == 56


def test_when_no_node_fits_the_message_is_kube_schedulers_to_the_character(in_case):
    in_case("taint-and-cpu")
    result = json.loads(cli(*case_args("taint-and-cpu")).out)
    assert result["selected"] is None and result["feasible"] == [] and result["scores"] == {}
    assert result["message"] == "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."


def test_the_seed_makes_the_tie_break_reproducible_and_matters(in_case):
    in_case("seed-tie-break")
    base = ["explain", "--cluster", "cluster.yaml", "--pod", "pod.yaml", "--seed"]
    first = cli(*base, "7").out
    assert cli(*base, "7").out == first
    result = json.loads(first)
    assert len({s["total"] for s in result["scores"].values()}) == 1  # a real tie
    picked = {json.loads(cli(*base, str(seed)).out)["selected"] for seed in range(12)}
    assert len(picked) > 1 and picked <= {"node-1", "node-2", "node-3", "node-4"}


def test_explain_writes_nothing(in_case, tmp_path):
    # Something in the cluster and the queue beforehand, to prove neither changes.
    (tmp_path / "live.yaml").write_text((CASES / "default" / "cluster.yaml").read_text() + "---\n"
                                        + (CASES / "default" / "pod.yaml").read_text())
    assert cli("apply", "-f", str(tmp_path / "live.yaml")).code == 0
    models = (Node, Pod, Attempt, Binding, Event, ClusterEvent)

    def state():
        q = queues.get_queue()
        return ([m.objects.count() for m in models], list(Node.objects.values_list("name", "req_cpu", "generation")),
                list(Pod.objects.values_list("name", "node_name", "assumed_node", "attempts")), q.lengths(), q.keys())

    before = state()
    for name in ("default", "taint-and-cpu", "seed-tie-break"):
        in_case(name)
        assert cli(*case_args(name)).code == 0
    assert state() == before


def test_bad_input_files_are_reported_like_apply(in_case, tmp_path):
    in_case("default")
    (tmp_path / "two.yaml").write_text((CASES / "default" / "pod.yaml").read_text() + "---\n"
                                       + (CASES / "default" / "pod.yaml").read_text().replace("name: web", "name: api"))
    r = cli("explain", "--cluster", "cluster.yaml", "--pod", str(tmp_path / "two.yaml"))
    assert r.code == 1 and r.err == f"{tmp_path / 'two.yaml'}: expected exactly one Pod, found 2 object(s)\n"
    r = cli("explain", "--cluster", "nope.yaml", "--pod", "pod.yaml")
    assert (r.code, r.err) == (1, "nope.yaml: cannot read: No such file or directory\n")


def test_through_manage_py(in_case):
    case = in_case("taint-and-cpu")
    r = manage(*case_args("taint-and-cpu"), cwd=case)
    assert (r.code, r.err) == (0, ""), r
    assert r.out == (case / "expected.json").read_text()
    case = in_case("invalid-profile")
    r = manage(*case_args("invalid-profile"), cwd=case)
    assert (r.code, r.out, r.err) == (1, "", (case / "expected.stderr").read_text()), r


HOSTILE = "a: &a [x, x]\nb: *a\n"  # the smallest alias bomb: refused at its anchor


@pytest.mark.parametrize("option, text, expected", [
    ("--cluster", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {a: &a x, b: *a}\n",
     "hostile.yaml: doc 1: metadata.labels.a: YAML anchors are not allowed (&a) (line 5, column 15)"),
    ("--pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  priority: " + "9" * 5000 + "\n",
     "hostile.yaml: doc 1: spec.priority: integer with more than 4300 digits (line 5, column 13)"),
    ("--profile", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + HOSTILE,
     "hostile.yaml: a: YAML anchors are not allowed (&a) (line 3, column 4)"),
    ("--profile", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: "
     + "[" * 300 + "]" * 300 + "\n", "hostile.yaml: profiles" + "[0]" * 99
     + ": nested more than 100 levels deep (line 3, column 110)"),
])
def test_hostile_yaml_in_any_input_is_refused_like_apply(in_case, tmp_path, option, text, expected):
    in_case("default")
    (tmp_path / "hostile.yaml").write_text(text)
    args = {"--cluster": "cluster.yaml", "--pod": "pod.yaml", "--profile": None}
    args[option] = "hostile.yaml"
    argv = ["explain"] + [a for k, v in args.items() if v for a in (k, str(tmp_path / v) if v == "hostile.yaml" else v)]
    r = cli(*argv)
    assert (r.code, r.out) == (1, "")
    assert r.err.splitlines() == [f"{tmp_path}/{expected}"]


def test_an_alias_bomb_through_manage_py_explain_is_one_line_and_no_traceback(in_case, tmp_path):
    in_case("default")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n")
    r = manage("explain", "--cluster", "cluster.yaml", "--pod", "pod.yaml", "--profile", str(bomb), cwd=CASES / "default")
    assert (r.code, r.out, r.err) == (1, "", f"{bomb}: a: YAML anchors are not allowed (&a) (line 3, column 4)\n"), r


def test_pod_level_requests_are_what_node_resources_fit_checks(tmp_path):
    (tmp_path / "cluster.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n")
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  resources: {requests: {cpu: '%s'}}\n"
           "  containers: [{name: a, image: i, resources: {requests: {cpu: 500m}}}]\n")
    (tmp_path / "big.yaml").write_text(pod % "3")  # the containers ask 500m; the pod as a whole asks 3
    (tmp_path / "fits.yaml").write_text(pod % "1500m")
    big = cli("explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "big.yaml"))
    assert big.code == 0 and json.loads(big.out)["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    fits = cli("explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "fits.yaml"))
    assert fits.code == 0 and json.loads(fits.out)["selected"] == "n1"


def test_a_profile_that_is_not_utf8_is_one_line_not_a_traceback(in_case, tmp_path):
    in_case("default")
    (tmp_path / "latin1.yaml").write_bytes(b"apiVersion: kubescheduler.config.k8s.io/v1\n# caf\xe9\n")
    r = cli("explain", "--cluster", "cluster.yaml", "--pod", "pod.yaml", "--profile", str(tmp_path / "latin1.yaml"))
    assert (r.code, r.out) == (1, "")
    assert r.err == f"{tmp_path / 'latin1.yaml'}: not UTF-8 text (invalid continuation byte at byte 48)\n"


def test_a_replica_without_constraints_is_spread_by_the_system_defaults_its_replicaset_selects_it_for(in_case):
    in_case("spread-default-constraints")
    result = json.loads(cli(*case_args("spread-default-constraints")).out)
    assert result["selected"] == "node-b1"
    spread = {node: s["plugins"]["PodTopologySpread"] for node, s in result["scores"].items()}
    # As upstream's scoring: per constraint cnt * log(domains + 2) + (maxSkew - 1), summed and rounded:
    # node-a1: 1*log(5) + 2 + 2*log(4) + 4 = 10.38 -> 10; node-b1: 0 + 2 + 0 + 4 = 6; then reversed min-max.
    assert {n: (s["raw"], s["normalized"]) for n, s in spread.items()} == {
        "node-a1": (10, 60), "node-a2": (10, 60), "node-b1": (6, 100)}
    assert spread["node-b1"]["weight"] == 2
