"""The pod page tells an evicted pod's story: its controller (up to the Deployment), the reason it went (its
DisruptionTarget condition), the TaintManagerEviction events, and a link to the replacement its owner
created, whose own page names the same owner."""

import re
from datetime import datetime, timedelta, timezone

import pytest

from scheduler.controllers import podgc, taint_eviction, workloads
from scheduler.controllers.node_lifecycle import node_set_ready
from scheduler.cluster.services import node_delete
from scheduler.models import ClusterObject, Pod
from scheduler.testing.loop import apply, drain, node

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def deployment(replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_an_evicted_pod_shows_why_it_went_and_links_its_replacement_and_their_owner(admin_client, clock):
    apply(node("a"), deployment())
    workloads.sync_all()
    drain(clock)
    gone = Pod.objects.get()
    rs = ClusterObject.objects.get(kind="ReplicaSet")
    apply(node("b"))
    later = datetime.now(timezone.utc) + timedelta(seconds=301)
    node_set_ready(name="a", status="False", now=datetime.now(timezone.utc))
    assert taint_eviction.run(now=later)["evicted"] == [f"default/{gone.name}"]
    workloads.sync_all()
    drain(clock)
    new = Pod.objects.get()
    assert new.node_name == "b"

    html = admin_client.get(f"/pods/default/{gone.name}/").content.decode()
    assert "This pod has been deleted" in html
    controlled = re.search(r'<dd id="controlled-by">(.*?)</dd>', html, re.S).group(1)
    assert f"ReplicaSet/{rs.name}</a> ← " in controlled and "Deployment/web</a>" in controlled
    assert re.search(r'<dd id="deleted">.*was on node <code>a</code>', html)
    assert ("<strong>DeletionByTaintManager</strong>: Taint manager: deleting due to NoExecute taint"
            in re.search(r'<dd id="disruption">(.*?)</dd>', html, re.S).group(1))
    assert re.search(rf'<a href="/pods/default/{new.name}/">default/{new.name}</a>, created [\d.]+ s after the deletion, '
                     r'bound to <code>b</code> [\d.]+ s after it', html)
    events = re.search(r'id="events-table">.*?</table>', html, re.S).group(0)
    assert "TaintManagerEviction" in events and f"Marking for deletion Pod default/{gone.name}" in events
    assert f"Created pod: {new.name}" in html and "Scaled up replica set" in html  # the owners' events

    html = admin_client.get(f"/pods/default/{new.name}/").content.decode()
    assert f"ReplicaSet/{rs.name}</a>" in re.search(r'<dd id="controlled-by">(.*?)</dd>', html, re.S).group(1)
    assert 'id="deleted"' not in html


def test_a_pod_collected_by_podgc_says_so(admin_client, clock):
    apply(node("a"), deployment())
    workloads.sync_all()
    drain(clock)
    gone = Pod.objects.get()
    node_delete(name="a")
    t = datetime.now(timezone.utc).timestamp()
    podgc.gc(now=t)
    assert podgc.gc(now=t + 41)["orphaned"] == [f"default/{gone.name}"]
    html = admin_client.get(f"/pods/default/{gone.name}/").content.decode()
    assert "<strong>DeletionByPodGC</strong>: PodGC: node no longer exists" in html
