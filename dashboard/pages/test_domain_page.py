"""The topology domain page (/nodes/domain/?key=..&value=..): a domain's nodes and pods, every domain of
the key with its counts, and the links to it from the attempt page's topology explanation."""

import pytest

from scheduler.models import Pod
from scheduler.testing.loop import apply
from scheduler.testing.topology import HOST, ZONE, node, pod

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster():
    apply(node("a0", "a"), node("a1", "a"), node("b0", "b"),
          {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}, "status": {"allocatable": {"cpu": "1"}}})
    apply(pod("web-0", {"app": "web"}, node_name="a0"), pod("web-1", {"app": "web"}, node_name="a1"),
          pod("web-2", {"app": "web"}, node_name="b0"), pod("pending", {"app": "web"}))


def test_a_domain_lists_its_nodes_and_pods_and_every_domain_of_the_key_with_counts(admin_client, cluster):
    html = admin_client.get("/nodes/domain/", {"key": ZONE, "value": "a"}).content.decode()
    assert "2 nodes, 2 pods bound or assumed on them." in html
    assert '<td><a href="/nodes/domain/?key=topology.kubernetes.io%2Fzone&amp;value=a">a</a></td>' \
           '<td class="num">2</td><td class="num">2</td><td class="num">0</td>' in html
    assert '<td><a href="/nodes/domain/?key=topology.kubernetes.io%2Fzone&amp;value=b">b</a></td>' \
           '<td class="num">1</td><td class="num">1</td>' in html
    assert "bare" not in html  # a node lacking the key belongs to no domain
    assert 'href="/pods/default/web-0/">default/web-0</a>' in html and "default/web-2" not in html
    assert "default/pending" not in html


def test_an_assumed_pod_counts_in_its_domain(admin_client, cluster):
    Pod.objects.filter(name="pending").update(assumed_node="b0")
    html = admin_client.get("/nodes/domain/", {"key": ZONE, "value": "b"}).content.decode()
    assert '<td class="num">1</td><td class="num">1</td><td class="num">1</td>' in html
    assert "default/pending" in html and "<td>assumed</td>" in html


def test_a_hostname_domain_is_one_node(admin_client, cluster):
    html = admin_client.get("/nodes/domain/", {"key": HOST, "value": "b0"}).content.decode()
    assert "1 node, 1 pod bound or assumed on them." in html


@pytest.mark.parametrize("query", [{}, {"key": ZONE}, {"value": "a"}, {"key": "k" * 400, "value": "a"}])
def test_a_missing_key_or_value_is_a_400_saying_what_to_give(admin_client, query):
    response = admin_client.get("/nodes/domain/", query)
    assert response.status_code == 400
    assert "Give a topology key and a value" in response.content.decode()


def test_the_nodes_page_offers_the_topology_keys_and_keeps_the_group_asked_for(admin_client):
    html = admin_client.get("/nodes/", {"group": ZONE}).content.decode()
    assert f'<option value="{ZONE}" selected>{ZONE}</option>' in html
    assert f'<option value="{HOST}">{HOST}</option>' in html
    html = admin_client.get("/nodes/", {"group": "rack"}).content.decode()
    assert '<option value="rack" selected>rack</option>' in html
