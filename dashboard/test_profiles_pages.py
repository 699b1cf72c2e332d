"""/profiles/, /whatif/ and /attempts/<id>/rescore/ on real Postgres, over a constructed history."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from scheduler.engine.config import ProfileConfig, SchedulerConfig, default_profile
from scheduler.versions.services import config_version_create
from scheduler.testing.whatif import HISTORY
from scheduler.testing.whatif import store

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client():
    c = Client()
    c.force_login(get_user_model().objects.create_user("viewer", password="pw"))
    return c


def image_x2() -> SchedulerConfig:
    p = default_profile()
    return SchedulerConfig([ProfileConfig(**{**p.__dict__, "scores": [(n, 2 if n == "ImageLocality" else w)
                                                                        for n, w in p.scores]})])


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_profiles_page_shows_the_active_version_of_each_profile_with_links_to_its_history(client):
    config_version_create(config=image_x2(), reason="images matter", user=get_user_model().objects.get())
    response = client.get("/profiles/")
    assert response.status_code == 200
    html, words = response.content.decode(), text(response)
    assert "Active configuration: version 1" in words and "images matter" in words and "by viewer" in words
    assert re.search(r'data-plugin="ImageLocality">ImageLocality&nbsp;<b>2</b>', html)
    assert 'href="/whatif/?version=1"' in html


def test_profiles_page_before_any_save_says_version_0_is_the_initial_configuration(client):
    words = text(client.get("/profiles/"))
    assert "Active configuration: version 0" in words and "the initial configuration" in words


def test_the_pages_need_a_login():
    for url in ("/profiles/", "/whatif/", "/attempts/1/rescore/"):
        response = Client().get(url)
        assert response.status_code == 302 and "/login" in response["Location"]


def test_whatif_with_draft_weights_gives_the_known_answer_with_links_to_the_changed_decisions(client):
    rows = store()
    response = client.get("/whatif/", {"profile": "default-scheduler", "window": "", "version": "0", "use_draft": "on",
                                       "w_TaintToleration": 3, "w_NodeAffinity": 2, "w_NodeResourcesFit": 1,
                                       "w_NodeResourcesBalancedAllocation": 1, "w_ImageLocality": 2})
    html, words = response.content.decode(), text(response)
    assert re.search(r'id="share-changed">40&nbsp;%', html)
    assert "2 of 5 answered" in words and "4 exactly" in words
    changed = re.findall(r'<a href="/attempts/(\d+)/">', html)
    assert changed == [str(rows[3].pk), str(rows[0].pk)]  # newest first
    assert "1 attempt: only the top candidates were stored" in words
    assert "What the stored data can answer." in words


def test_whatif_with_a_saved_version_matches_the_same_draft(client):
    store()
    config_version_create(config=image_x2(), reason="images matter")
    html = client.get("/whatif/", {"profile": "default-scheduler", "version": "1"}).content.decode()
    assert re.search(r'id="share-changed">40&nbsp;%', html)


def test_whatif_takes_only_the_window_of_latest_attempts(client):
    store()
    words = text(client.get("/whatif/", {"profile": "default-scheduler", "window": "2", "version": "0", "use_draft": "on",
                                         "w_ImageLocality": 2, "w_TaintToleration": 3, "w_NodeAffinity": 2}))
    # The two newest are attempts 5 (same) and 4 (changed, a -> c).
    assert "Attempts 2" in words and "1 of 2 answered" in words


def test_whatif_form_defaults_to_the_last_1000_attempts_and_the_active_version(client):
    config_version_create(config=image_x2(), reason="x")
    html = client.get("/whatif/").content.decode()
    assert re.search(r'name="window" value="1000"', html)
    assert re.search(r'<option value="1" selected>version 1 \(active\)</option>', html)


def test_rescore_shows_whether_the_winner_changes_and_how_much_each_score_moves(client):
    rows = store()
    response = client.get(f"/attempts/{rows[0].pk}/rescore/", {"version": "0", "use_draft": "on", "w_TaintToleration": 3,
                                                                "w_NodeAffinity": 2, "w_NodeResourcesFit": 1,
                                                                "w_NodeResourcesBalancedAllocation": 1, "w_ImageLocality": 2})
    html, words = response.content.decode(), text(response)
    assert "The winner changes : a → b" in words
    b = re.search(r'data-node="b">(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', b) == ["90", "130", "+40"]
    a = re.search(r'data-node="a">(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', a) == ["100", "100", "0"]


def test_rescore_of_a_one_node_decision_says_weights_cannot_move_it(client):
    rows = store()
    words = text(client.get(f"/attempts/{rows[2].pk}/rescore/", {"version": "0"}))
    assert "The winner stays c : only one node was feasible" in words


def test_rescore_of_an_unknown_attempt_is_404(client):
    assert client.get("/attempts/999999/rescore/").status_code == 404


def test_whatif_offers_every_profile_that_has_attempts_not_only_the_latest_ones(client):
    # "retired" was a profile of version 1 only; its attempts are older than 60 of the default profile.
    config_version_create(config=SchedulerConfig([default_profile(), default_profile("retired")]), reason="two")
    config_version_create(config=SchedulerConfig([default_profile()]), reason="retire it")
    old = timezone.now() - timedelta(hours=1)
    store([HISTORY[0].__class__(**{**HISTORY[0].__dict__, "profile_name": "retired", "profile_version": 1})], start=old)
    store(HISTORY * 12)  # 60 newer attempts of the default profile
    html = client.get("/whatif/").content.decode()
    assert '<option value="retired">retired</option>' in html


@pytest.mark.parametrize("url", ["/whatif/", "/whatif/?profile=default-scheduler&version=0&window=5"])
def test_whatif_takes_the_profiles_from_the_versions_not_from_a_scan_of_the_attempts(client, url):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    config_version_create(config=SchedulerConfig([default_profile(), default_profile("batch")]), reason="two")
    config_version_create(config=SchedulerConfig([default_profile()]), reason="one")
    store()
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content.decode()
    assert '<option value="batch">batch</option>' in html  # no attempt has it: a version does
    on_attempts = [q["sql"] for q in queries if '"scheduler_attempt"' in q["sql"]]
    assert not [q for q in on_attempts if "DISTINCT" in q.upper()]
    assert len(on_attempts) == (1 if "window" in url else 0)


def test_whatif_streams_only_the_stored_scores_and_keeps_none_of_them(client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    store()
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/whatif/", {"profile": "default-scheduler", "version": "0", "use_draft": "on", **DRAFT,
                                           "w_ImageLocality": 2})
    assert re.search(r'id="share-changed">40&nbsp;%', response.content.decode())  # the same known answer
    (sql,) = [q["sql"] for q in queries if 'FROM "scheduler_attempt"' in q["sql"]]
    assert re.search(r'"scheduler_attempt"\."trace" -> \'scores\'', sql)  # of the trace, only its scores
    assert not re.search(r'"scheduler_attempt"\."trace"(,| FROM)', sql)
    results = response.context["result"].results
    assert len(results) == 5 and all(r.attempt.trace == {} and r.attempt.candidates == [] and r.candidates == []
                                     for r in results)


DRAFT = {"w_TaintToleration": 3, "w_NodeAffinity": 2, "w_NodeResourcesFit": 1, "w_PodTopologySpread": 2,
         "w_InterPodAffinity": 2, "w_NodeResourcesBalancedAllocation": 1}
# Score plugins in the dumped profile's score list: TaintToleration, NodeAffinity, NodeResourcesFit,
# PodTopologySpread, InterPodAffinity, NodeResourcesBalancedAllocation, ImageLocality -> ImageLocality is enabled[6].
IMAGE_WEIGHT_PATH = "profiles[0].plugins.score.enabled[6].weight"


@pytest.mark.parametrize("weight, error", [
    ("999999999999999999999999", f"{IMAGE_WEIGHT_PATH}: cannot unmarshal number into Go value of type int32"),
    ("2147483648", f"{IMAGE_WEIGHT_PATH}: cannot unmarshal number into Go value of type int32"),
    ("-2147483649", f"{IMAGE_WEIGHT_PATH}: cannot unmarshal number into Go value of type int32"),
    ("2147483647", None),
    ("0", None),  # as unset: 1, as the loader
])
@pytest.mark.parametrize("page", ["whatif", "rescore"])
def test_draft_weights_go_through_the_loaders_validation(client, page, weight, error):
    rows = store()
    url = "/whatif/" if page == "whatif" else f"/attempts/{rows[0].pk}/rescore/"
    response = client.get(url, {"profile": "default-scheduler", "version": "0", "use_draft": "on", **DRAFT,
                                "w_ImageLocality": weight})
    assert response.status_code == 200
    words = text(response)
    if error:
        assert error in words
        assert "Result:" not in words and "With draft" not in words  # nothing computed
    else:
        assert "cannot unmarshal" not in words
        assert ("Result: draft weights on version 0" if page == "whatif" else "With draft weights on version 0") in words


def test_a_draft_weight_of_0_is_1_as_the_loader_says(client):
    rows = store()
    response = client.get(f"/attempts/{rows[0].pk}/rescore/", {"version": "0", "use_draft": "on", **DRAFT,
                                                                "w_ImageLocality": 0})
    # b: 50 + 40 × 1 = 90, unchanged (taken literally, 0 would make it 50).
    b = re.search(r'data-node="b">(.*?)</tr>', response.content.decode(), re.S).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', b) == ["90", "90", "0"]


@pytest.mark.parametrize("page", ["whatif", "rescore"])
def test_the_target_field_reads_configuration_version_n_once(client, page):
    rows = store()
    url = "/whatif/" if page == "whatif" else f"/attempts/{rows[0].pk}/rescore/"
    words = text(client.get(url))
    assert "version version" not in words
    assert "configuration version 0 (initial)" in words


@pytest.mark.parametrize("staff, perm, admin_links, edit_links", [
    (False, False, False, False),
    (False, True, False, False),  # a permission without staff status does not open the admin
    (True, False, True, False),
    (True, True, True, True),
])
def test_profiles_page_links_into_the_admin_only_for_staff(staff, perm, admin_links, edit_links):
    from django.contrib.auth.models import Permission
    user = get_user_model().objects.create_user("someone", password="pw", is_staff=staff)
    if perm:
        user.user_permissions.add(Permission.objects.get(codename="add_schedulerconfigversion"))
    version = config_version_create(config=image_x2(), reason="images matter", user=user)
    c = Client()
    c.force_login(user)
    html = c.get("/profiles/").content.decode()
    assert ('href="/admin/scheduler/schedulerconfigversion/"' in html) is admin_links  # the history
    assert (f'href="/admin/scheduler/schedulerconfigversion/{version.pk}/change/"' in html) is admin_links  # diff
    assert ('href="/admin/"' in html) is admin_links  # the navigation
    assert ("edit in admin" in html) is edit_links
    assert 'href="/whatif/?version=1"' in html  # not an admin page: for everyone


def test_whatif_page_counts_a_move_to_tied_nodes_as_one_of_n(client):
    from scheduler.testing.whatif import TIE_OF_2
    store([TIE_OF_2])
    response = client.get("/whatif/", {"profile": "default-scheduler", "version": "0", "use_draft": "on", **DRAFT,
                                       "w_ImageLocality": 2})
    html, words = response.content.decode(), text(response)
    cells = {n: re.findall(r'<td class="num">([^<]*)</td>', re.search(rf'<tr data-node="{n}">(.*?)</tr>', html, re.S).group(1))
             for n in "abc"}
    assert cells == {"a": ["0", "1", "-1", "0"], "b": ["1/2", "0", "1/2", "1"], "c": ["1/2", "0", "1/2", "1"]}
    assert "one of 2 tied nodes: b, c" in words
    assert "each of the N tied nodes is counted as gaining 1/N of that pod" in words
