"""PodTopologySpread and InterPodAffinity in the loop on the shared state: the worker's snapshot
holds the placed pods (loaded once, then followed by node generation), and a claim whose constraints
span nodes is checked again against what other workers committed."""

import pytest
import yaml

from django.conf import settings

from scheduler import loop
from scheduler.cluster.services import cluster_apply, pod_delete
from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt, Pod
from scheduler.queue import queues
from scheduler.queue.redis_queue import RedisQueue
from scheduler.state import topology_claims
from scheduler.state.reservations import release_assumed, row_usage
from scheduler.telemetry import metrics
from scheduler.testing.topology import HOST, ZONE, anti, node, pod, spread, topology_config

pytestmark = pytest.mark.django_db(transaction=True)

def apply(*objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "test.yaml"))


@pytest.fixture(autouse=True)
def worker():
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX,
                                  on_incoming=metrics.count_incoming))
    loop.reset_worker(loop.Worker(config=topology_config()))
    return loop.get_worker()


def drain():
    for _ in range(30):
        loop.reconcile()
        if not loop.run_schedule_task().popped:
            return
    raise AssertionError("queue never drained")


def placed(prefix):
    return dict(Pod.objects.filter(name__startswith=prefix).exclude(node_name="").values_list("name", "node_name"))


def test_anti_affine_replicas_land_on_distinct_hosts_and_the_one_too_many_is_unschedulable_with_upstreams_reason():
    apply(*(node(f"n{i}", "a") for i in range(3)))
    apply(*(pod(f"web-{i}", {"app": "web"}, affinity=anti(HOST, app="web")) for i in range(4)))
    drain()
    hosts = placed("web-")
    assert len(hosts) == 3 and len(set(hosts.values())) == 3
    left = Pod.objects.get(name__in=[f"web-{i}" for i in range(4)], node_name="")
    assert left.scheduled_reason == "Unschedulable"
    assert left.scheduled_message == ("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
                                      "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")


def test_a_pod_without_terms_avoids_the_hosts_of_existing_pods_anti_affinity():
    apply(node("n0", "a"), node("n1", "a"))
    apply(pod("guard", {"app": "guard"}, node_name="n0", affinity=anti(HOST, app="web")))
    apply(pod("web", {"app": "web"}))
    drain()
    assert Pod.objects.get(name="web").node_name == "n1"


def test_spread_with_max_skew_one_alternates_zones():
    apply(node("a0", "a"), node("a1", "a"), node("b0", "b"))
    apply(*(pod(f"s-{i}", {"app": "s"}, topologySpreadConstraints=spread(ZONE, app="s")) for i in range(4)))
    drain()
    zones = [name[0] for name in placed("s-").values()]
    assert len(zones) == 4 and zones.count("a") == 2 and zones.count("b") == 2


def test_the_snapshot_follows_placed_pods_by_node_generation(worker):
    apply(node("n0", "a"), node("n1", "a"), node("n2", "b"))
    apply(pod("x", {"app": "x"}, node_name="n0"), pod("y", {"app": "y"}, node_name="n1"))
    snapshot = worker.snapshot
    cache = snapshot.refresh()
    assert sorted(cache.table.pods.pods()) == [("default/x", 0), ("default/y", 1)]
    # Nothing changed: no node is read again.
    assert snapshot.placed.sync(cache.table, snapshot.placed.generations) == 0
    pod_delete(namespace="default", name="x")
    apply(pod("z", {"app": "z"}, node_name="n2"))
    generations = snapshot.placed.generations.copy()
    cache = snapshot.refresh()
    assert sorted(cache.table.pods.pods()) == [("default/y", 1), ("default/z", 2)]
    # Only the two nodes whose pods changed were read again.
    changed = {name for name, gen in snapshot.placed.generations.items() if generations.get(name) != gen}
    assert changed == {"n0", "n2"}


def test_a_pod_assumed_and_then_released_leaves_the_index():
    apply(node("n0", "a"), node("n1", "a"))
    apply(pod("web-0", {"app": "web"}, affinity=anti(HOST, app="web")))
    w = loop.get_worker()
    w.schedule_batch()  # reserved (not bound yet: the bind task has not run)
    row = Pod.objects.get(name="web-0")
    assert row.assumed_node

    assert release_assumed(pod_id=row.pk, node_name=row.assumed_node, usage=row_usage(row))
    cache = w.snapshot.refresh()
    assert cache.table.pods.pods() == []


def _stale_reserve(worker, name, node_name):
    """Reserve `name` on `node_name` as a worker whose snapshot predates the last commit would."""
    row = Pod.objects.get(name=name)
    spec = worker.pod_spec(row)
    worker.snapshot.cache.assume(spec, worker.snapshot.cache.table.index[node_name])
    placement = (row.pk, row_usage(row), node_name, worker.snapshot.spec_versions.get(node_name), row.updated_at)
    return topology_claims.reserve([(placement, spec, worker.profiles[spec.scheduler_name])], worker.snapshot), row.pk


def test_a_claim_that_another_workers_commit_made_invalid_is_refused():
    apply(node("n0", "a"), node("n1", "b"))
    apply(pod("web-0", {"app": "web"}, affinity=anti(ZONE, app="web")),
          pod("web-1", {"app": "web"}, affinity=anti(ZONE, app="web")))
    late = loop.Worker(config=topology_config())
    late.snapshot.refresh()  # before web-0 lands
    first = loop.get_worker()
    first.snapshot.refresh()
    result, _ = _stale_reserve(first, "web-0", "n0")
    assert not result.conflicts
    # The late worker still sees zone a empty and puts web-1 there: refused at claim.
    result, pk = _stale_reserve(late, "web-1", "n0")
    assert result.conflicts == {pk}
    assert Pod.objects.get(name="web-1").assumed_node == ""
    # The same worker's other choice holds.
    late.snapshot.cache.forget("default/web-1")
    result, _ = _stale_reserve(late, "web-1", "n1")
    assert not result.conflicts and Pod.objects.get(name="web-1").assumed_node == "n1"


def test_a_plain_pod_is_checked_when_an_anti_affine_pod_was_claimed_since_its_snapshot():
    apply(node("n0", "a"), node("n1", "a"))
    apply(pod("guard", {"app": "guard"}, affinity=anti(HOST, app="web")), pod("web", {"app": "web"}))
    late = loop.Worker(config=topology_config())
    late.snapshot.refresh()  # before the guard lands
    first = loop.get_worker()
    first.snapshot.refresh()
    result, _ = _stale_reserve(first, "guard", "n0")
    assert not result.conflicts
    result, pk = _stale_reserve(late, "web", "n0")
    assert result.conflicts == {pk}
    late.snapshot.cache.forget("default/web")
    result, _ = _stale_reserve(late, "web", "n1")
    assert not result.conflicts


def test_a_plain_pod_claims_without_a_check_while_no_anti_affine_pod_was_claimed():
    apply(node("n0", "a"))
    apply(pod("a", {"app": "a"}), pod("b", {"app": "b"}))
    w = loop.get_worker()
    clock = topology_claims.read_clock()
    drain()
    assert set(placed("").values()) == {"n0"} and topology_claims.read_clock() == clock
    assert Attempt.objects.filter(result="scheduled").count() == 2


def test_a_spread_failure_keeps_each_domains_count_and_the_attempt_page_shows_the_skew(admin_client):
    full = node("b0", "b")
    full["status"]["allocatable"]["cpu"] = "50m"  # no room in zone b
    apply(node("a0", "a"), full)
    apply(pod("old-0", {"app": "s"}, node_name="a0"), pod("old-1", {"app": "s"}, node_name="a0"))
    apply(pod("s-new", {"app": "s"}, topologySpreadConstraints=spread(ZONE, app="s")))
    drain()
    attempt = Attempt.objects.get(pod_name="s-new")
    assert attempt.message == ("0/2 nodes are available: 1 Insufficient cpu, "
                               "1 node(s) didn't match pod topology spread constraints. preemption: 0/2 nodes are "
                               "available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.")
    [constraint] = attempt.trace["topology"]["PodTopologySpread"]
    assert constraint["topologyKey"] == ZONE and constraint["maxSkew"] == 1 and constraint["selector"] == "app=s"
    assert constraint["domains"] == {"a": 2, "b": 0} and constraint["globalMin"] == 0
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()
    assert 'id="h-topology"' in html
    # Zone a would go to 3 against a minimum of 0: marked as beyond maxSkew 1.
    assert ('<tr class="bad"><td><a href="/nodes/domain/?key=topology.kubernetes.io%2Fzone&amp;value=a">a</a></td>'
            '<td class="num">2</td><td class="num">3 &gt; 1</td></tr>') in html


def test_an_anti_affinity_failure_keeps_the_matching_pods_per_domain_and_the_attempt_page_links_them(admin_client):
    apply(node("n0", "a"))
    apply(pod("web-0", {"app": "web"}, node_name="n0"))
    apply(pod("web-1", {"app": "web"}, affinity=anti(HOST, app="web")))
    drain()
    attempt = Attempt.objects.get(pod_name="web-1")
    assert attempt.message == ("0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. "
                               "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    part = attempt.trace["topology"]["InterPodAffinity"]
    assert part["antiAffinity"] == {HOST: {"n0": 1}} and part["requiredAntiAffinityKeys"] == [HOST]
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()
    assert '<a href="/nodes/domain/?key=kubernetes.io%2Fhostname&amp;value=n0">n0</a>' in html


def test_nodes_only_this_worker_reserved_on_are_not_read_again_and_others_are(worker, monkeypatch):
    from scheduler.state import placed_pods

    reads = []
    real_rows = placed_pods._rows
    monkeypatch.setattr(placed_pods, "_rows", lambda names: reads.append(names) or real_rows(names))
    apply(node("n0", "a"), node("n1", "a"), node("n2", "b"))
    apply(*(pod(f"p-{i}", {"app": "p"}) for i in range(3)))
    w = loop.get_worker()
    w.snapshot.refresh()
    w.schedule_batch()  # reserves all three (the bind task has not run)
    assert Pod.objects.exclude(assumed_node="").count() == 3
    placed = w.snapshot.placed
    before = dict(placed.generations)
    reads.clear()
    cache = w.snapshot.refresh()
    assert reads == []  # no node read again: the reservations were this worker's own
    assert sorted(k for k, _ in cache.table.pods.pods()) == ["default/p-0", "default/p-1", "default/p-2"]
    # Another worker's change on a node is read.
    apply(pod("other", {"app": "o"}, node_name="n2"))
    cache = w.snapshot.refresh()
    assert reads == [["n2"]] and ("default/other", 2) in cache.table.pods.pods()


def test_a_checked_claim_leaves_the_pod_in_the_index_for_the_next_batch():
    apply(node("n0", "a"), node("n1", "a"))
    apply(pod("web-0", {"app": "web"}, affinity=anti(HOST, app="web")))
    w = loop.get_worker()
    w.schedule_batch()  # a checked claim: the pod has required anti-affinity
    first = Pod.objects.get(name="web-0").assumed_node
    cache = w.snapshot.refresh()
    assert cache.table.pods.pods() == [("default/web-0", cache.table.index[first])]
    apply(pod("web-1", {"app": "web"}, affinity=anti(HOST, app="web")))
    w.schedule_batch()
    assert Pod.objects.get(name="web-1").assumed_node not in ("", first)


def _stale_reserve_many(worker, placements):
    """Reserve (pod name, node) pairs as one batch of a worker whose snapshot predates the last commit."""
    items, ids = [], {}
    for name, node_name in placements:
        row = Pod.objects.get(name=name)
        spec = worker.pod_spec(row)
        worker.snapshot.cache.assume(spec, worker.snapshot.cache.table.index[node_name])
        items.append(((row.pk, row_usage(row), node_name, worker.snapshot.spec_versions.get(node_name), row.updated_at),
                      spec, worker.profiles[spec.scheduler_name]))
        ids[name] = row.pk
    return topology_claims.reserve(items, worker.snapshot), ids


def test_a_batch_of_checked_claims_reads_the_node_generations_once_and_checks_each_against_the_earlier(monkeypatch):
    apply(node("n0", "a"), node("n1", "a"), node("n2", "a"))
    apply(*(pod(f"web-{i}", {"app": "web"}, affinity=anti(HOST, app="web")) for i in range(3)))
    reads = []
    real = topology_claims._generations
    monkeypatch.setattr(topology_claims, "_generations", lambda: reads.append(1) or real())
    w = loop.get_worker()
    w.snapshot.refresh()
    # Two of the batch on one host: the second is refused by the check that counts the first.
    result, ids = _stale_reserve_many(w, [("web-0", "n0"), ("web-1", "n1"), ("web-2", "n0")])
    assert len(reads) == 1
    assert result.conflicts == {ids["web-2"]}
    assert dict(Pod.objects.exclude(assumed_node="").values_list("name", "assumed_node")) == {"web-0": "n0", "web-1": "n1"}


def test_a_checked_batch_that_loses_a_nodes_room_is_claimed_pod_by_pod(monkeypatch):
    apply(node("n0", "a"), node("n1", "a"))
    apply(*(pod(f"web-{i}", {"app": "web"}, affinity=anti(HOST, app="web")) for i in range(2)))
    w = loop.get_worker()
    w.snapshot.refresh()
    hog = pod("hog", {"app": "hog"}, node_name="n1")
    hog["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8"
    apply(hog)  # after the snapshot: n1 has no room left for web-1
    reads = []
    real = topology_claims._generations
    monkeypatch.setattr(topology_claims, "_generations", lambda: reads.append(1) or real())
    result, ids = _stale_reserve_many(w, [("web-0", "n0"), ("web-1", "n1")])
    assert len(reads) == 3  # the batch, rolled back, then each pod alone
    assert result.conflicts == {ids["web-1"]}
    assert dict(Pod.objects.exclude(assumed_node="").values_list("name", "assumed_node")) == {"web-0": "n0"}
    # The index holds web-0 once (reserved) and not web-1.
    assert [k for k, _ in w.snapshot.cache.table.pods.pods() if k.startswith("default/web")] == ["default/web-0"]


def test_both_plugins_score_in_the_attempts_matrix_and_what_if_reweights_them(admin_client):
    import re

    from scheduler.engine.config import ProfileConfig, SchedulerConfig, default_profile
    from scheduler.versions.profiles import config_for_version
    from scheduler.versions.services import config_version_create
    from scheduler.versions.whatif import CHANGED, SAME, StoredAttempt, Target, what_if

    # A cache on n0 draws the web pod there (preferred hostname affinity); zone a already has a web pod, so
    # its soft zone spread pushes it to zone b. The two plugins disagree, each at weight 2.
    apply(node("n0", "a"), node("n1", "a"), node("n2", "b"))
    apply(pod("cache-0", {"app": "cache"}, node_name="n0"), pod("web-old", {"app": "web"}, node_name="n1"))
    soft = [{**spread(ZONE, app="web")[0], "whenUnsatisfiable": "ScheduleAnyway"}]
    near_cache = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
        "topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "cache"}}}}]}}
    apply(pod("web-new", {"app": "web"}, topologySpreadConstraints=soft, affinity=near_cache))
    drain()
    attempt = Attempt.objects.get(pod_name="web-new", result="scheduled")
    by_node = {c["node"]: c["plugins"] for c in attempt.candidates}
    assert {n: p["InterPodAffinity"]["normalized"] for n, p in by_node.items()} == {"n0": 100, "n1": 0, "n2": 0}
    assert {n: p["PodTopologySpread"]["normalized"] for n, p in by_node.items()} == {"n0": 0, "n1": 0, "n2": 100}

    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()
    header = re.search(r'<table class="data" id="scores">.*?</thead>', html, re.S).group(0)
    plugins = re.findall(r'<th colspan="3" scope="colgroup">(\w+) <span class="muted">\(weight (\d+)\)</span></th>', header)
    assert plugins == [("TaintToleration", "3"), ("NodeResourcesFit", "1"), ("PodTopologySpread", "2"),
                       ("InterPodAffinity", "2"), ("NodeResourcesBalancedAllocation", "1"), ("ImageLocality", "1")]

    def ran_with(version, profile_name):
        return config_for_version(version).profile(profile_name)

    stored = [StoredAttempt.from_row(attempt)]
    assert [r.verdict for r in what_if(stored, Target("version 0", config_for_version(0)), ran_with=ran_with).results] == [SAME]
    # InterPodAffinity above all: the stored scores say the pod goes next to the cache.
    p = default_profile()
    affinity_x50 = ProfileConfig(**{**p.__dict__, "scores": [(n, 50 if n == "InterPodAffinity" else w) for n, w in p.scores]})
    version = config_version_create(config=SchedulerConfig([affinity_x50]), reason="near the cache")
    [result] = what_if(stored, Target(f"version {version.number}", config_for_version(version.number)),
                       ran_with=ran_with).results
    if attempt.node_name == "n0":
        assert result.verdict == SAME
    else:
        assert (result.verdict, result.new_node) == (CHANGED, "n0")
