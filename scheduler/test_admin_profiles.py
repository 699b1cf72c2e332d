"""The admin's profile pages on real Postgres: a staff user edits the active configuration through
the rendered form and saves a new version with a reason; kube-scheduler's validation (the same as
an import's) refuses bad edits with upstream's field paths and wording, and nothing is saved."""

import re
from html import unescape
from html.parser import HTMLParser

import pytest

from scheduler.engine.plugins.default_preemption import DefaultPreemptionArgs
from scheduler.engine.plugins.inter_pod_affinity import InterPodAffinityArgs
from scheduler.engine.plugins.pod_topology_spread import PodTopologySpreadArgs
from scheduler.engine.pods import TopologySpreadConstraint
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from scheduler.engine.config import default_config, dump_config, load_config
from scheduler.engine.plugin_args import MOST_ALLOCATED
from scheduler.models import SchedulerConfigVersion
from scheduler.versions.services import config_active, config_version_create

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()
BASE = "/admin/scheduler/schedulerconfigversion/"
PROFILE = BASE + "profiles/default-scheduler/"


class _Form(HTMLParser):
    """The values a browser would submit for the page's form (inputs, checkboxes, selects, textareas)."""

    def __init__(self, form_id: str):
        super().__init__()
        self.form_id, self.inside, self.data = form_id, False, {}
        self._select = self._textarea = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside or "name" not in a and tag != "option":
            return
        if tag == "input":
            if a.get("type") == "checkbox":
                if "checked" in a:
                    self.data[a["name"]] = "on"
            elif a.get("type") not in ("submit", "file"):
                self.data[a["name"]] = a.get("value", "")
        elif tag == "select":
            self._select = a["name"]
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea = a["name"]
            self.data[a["name"]] = ""

    def handle_data(self, data):
        if self._textarea:
            self.data[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            if self._textarea:  # a browser drops the newline right after <textarea>
                self.data[self._textarea] = self.data[self._textarea].removeprefix("\n")
            self._textarea = None
        elif tag == "form":
            self.inside = False


def form_data(client: Client, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200
    parser = _Form("profile-form")
    parser.feed(response.content.decode())
    return parser.data


def row_of(data: dict, plugin: str) -> str:
    """The plugins formset prefix of a plugin's row."""
    return next(k.removesuffix("-name") for k, v in data.items() if k.startswith("plugins-") and v == plugin)


@pytest.fixture
def staff():
    client = Client()
    client.force_login(User.objects.create_superuser("ops", "ops@example.com", "pw"))
    return client


def save(client: Client, data: dict, url: str = PROFILE):
    return client.post(url, data)


def problems_on(response) -> list[str]:
    html = response.content.decode()
    block = re.search(r'<ul class="errorlist config-problems" id="config-problems">(.*?)</ul>', html, re.S)
    if not block:
        return []
    items = re.findall(r"<li>(.*?)</li>", block.group(1), re.S)
    return [unescape(re.sub(r"<[^>]+>", "", re.sub(r' <span class="where">.*?</span>', "", li))) for li in items]


def where_on(response) -> list[str]:
    """The page part each problem points at, as shown beside it."""
    return re.findall(r'<span class="where">\((.*?)\)</span>', response.content.decode())


# ---- editing ----------------------------------------------------------------------------

def test_a_staff_user_changes_a_weight_gives_a_reason_and_a_new_active_version_is_saved(staff):
    data = form_data(staff, PROFILE)
    data[row_of(data, "ImageLocality") + "-weight"] = "5"
    data["reason"] = "prefer nodes that have the image"
    response = save(staff, data)
    assert response.status_code == 302
    version = SchedulerConfigVersion.objects.get()
    assert (version.number, version.active, version.created_by.username, version.reason) == \
        (1, True, "ops", "prefer nodes that have the image")
    number, config = config_active()
    assert number == 1
    expected = default_config()
    expected.profiles[0].scores = [(n, 5 if n == "ImageLocality" else w) for n, w in expected.profiles[0].scores]
    assert config == expected
    assert response["Location"] == f"{BASE}{version.pk}/change/"


def test_the_form_edits_the_topology_plugins_args_and_shows_them_again(staff):
    data = form_data(staff, PROFILE)
    data["spread_defaulting_type"] = "List"
    data["spread_default_constraints"] = "- {maxSkew: 2, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"
    data["hard_pod_affinity_weight"] = "7"
    data["ignore_preferred_terms_of_existing_pods"] = "on"
    data["reason"] = "spread by zone"
    assert save(staff, data).status_code == 302
    _, config = config_active()
    args = config.profiles[0].plugin_args
    assert args["InterPodAffinity"] == InterPodAffinityArgs(7, True)
    assert args["PodTopologySpread"] == PodTopologySpreadArgs(
        (TopologySpreadConstraint(2, "topology.kubernetes.io/zone", "DoNotSchedule"),), "List")
    again = form_data(staff, PROFILE)
    assert again["spread_defaulting_type"] == "List" and again["hard_pod_affinity_weight"] == "7"
    assert "maxSkew: 2" in again["spread_default_constraints"]


def test_the_form_edits_default_preemptions_args_and_switches_it_off_at_post_filter(staff):
    data = form_data(staff, PROFILE)
    row = row_of(data, "DefaultPreemption")
    assert data[row + "-post_filter"] == "on" and data["min_candidate_nodes_percentage"] == "10"
    data["min_candidate_nodes_percentage"] = "30"
    data["min_candidate_nodes_absolute"] = "5"
    data["reason"] = "dry-run fewer nodes"
    assert save(staff, data).status_code == 302
    _, config = config_active()
    assert config.profiles[0].plugin_args["DefaultPreemption"] == DefaultPreemptionArgs(30, 5)
    assert config.profiles[0].post_filters == ["DefaultPreemption"]
    data = form_data(staff, PROFILE)
    assert data["min_candidate_nodes_absolute"] == "5"
    del data[row + "-post_filter"]
    data["reason"] = "no preemption"
    assert save(staff, data).status_code == 302
    _, config = config_active()
    assert config.profiles[0].post_filters == []


def test_bad_default_preemption_args_are_refused_with_upstreams_words(staff):
    data = form_data(staff, PROFILE)
    data["min_candidate_nodes_percentage"] = "0"
    data["min_candidate_nodes_absolute"] = "0"
    data["reason"] = "nothing"
    response = save(staff, data)
    assert response.status_code == 200
    assert problems_on(response) == [
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
        "time as minCandidateNodesAbsolute",
        "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
        "time as minCandidateNodesPercentage"]
    assert where_on(response) == ["DefaultPreemption args", "DefaultPreemption args"]
    assert not SchedulerConfigVersion.objects.exists()


def test_saving_the_form_untouched_saves_the_same_configuration(staff):
    config_version_create(config=load_config(MULTI), reason="start")
    for name in ("default-scheduler", "packer"):
        data = form_data(staff, f"{BASE}profiles/{name}/")
        data["reason"] = f"no change to {name}"
        assert save(staff, data, f"{BASE}profiles/{name}/").status_code == 302
    versions = {v.number: v.config for v in SchedulerConfigVersion.objects.all()}
    assert versions[1] == versions[2] == versions[3]


MULTI = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 40
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  percentageOfNodesToScore: 20
  plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 4
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/foo]
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources: [{name: cpu, weight: 3}, {name: memory, weight: 1}]
        requestedToCapacityRatio:
          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: pool, operator: In, values: [batch]}
"""


def test_the_form_edits_args_shape_rows_and_switches_plugins_off(staff):
    data = form_data(staff, PROFILE)
    data["fit_type"] = "RequestedToCapacityRatio"
    data.update({"shape-0-utilization": "0", "shape-0-score": "10", "shape-1-utilization": "100", "shape-1-score": "0"})
    data["fit-0-weight"] = "7"  # cpu
    data[row_of(data, "NodePorts") + "-filter"] = ""
    del data[row_of(data, "NodePorts") + "-filter"]
    del data[row_of(data, "ImageLocality") + "-score"]
    data["added_affinity"] = "preferredDuringSchedulingIgnoredDuringExecution:\n- weight: 3\n  preference:\n" \
                             "    matchExpressions:\n    - {key: zone, operator: In, values: [a]}\n"
    data["reason"] = "spread by a shape"
    assert save(staff, data).status_code == 302
    profile = config_active()[1].profiles[0]
    assert "NodePorts" not in profile.filters and "ImageLocality" not in dict(profile.scores)
    strategy = profile.plugin_args["NodeResourcesFit"].scoring_strategy
    assert (strategy.type, [(p.utilization, p.score) for p in strategy.shape]) == \
        ("RequestedToCapacityRatio", [(0, 10), (100, 0)])
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 7), ("memory", 1)]
    assert profile.plugin_args["NodeAffinity"].added_preferred_terms[0].weight == 3


def edit(field, value):
    return lambda d: d.__setitem__(field, value)


def plugin_off(plugin, point):
    return lambda d: d.pop(row_of(d, plugin) + "-" + point, None)


def shape(*points, type_="RequestedToCapacityRatio"):
    def change(d):
        d["fit_type"] = type_
        d["shape-TOTAL_FORMS"] = str(max(len(points), 2))
        for i, (u, s) in enumerate(points):
            d[f"shape-{i}-utilization"], d[f"shape-{i}-score"] = str(u), str(s)
    return change


FIT = "profiles[0].pluginConfig[0].args"  # NodeResourcesFit is the only pluginConfig that differs from defaults
BAD_EDITS = [
    (edit("percentage_of_nodes_to_score", "101"),
     "profiles[0].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
    (edit("global_percentage_of_nodes_to_score", "-1"),
     "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"),
    (edit("pod_initial_backoff_seconds", "0"), "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
    (edit("pod_max_backoff_seconds", "0"),
     "podMaxBackoffSeconds: Invalid value: 0: must be greater than or equal to PodInitialBackoffSeconds"),
    (edit("scheduler_name", ""), "profiles[0].schedulerName: Required value"),
    (edit("fit-0-weight", "101"),
     f"{FIT}.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
    (edit("fit-1-weight", "-2"),
     f"{FIT}.scoringStrategy.resources[1].weight: Invalid value: -2: resource weight of memory not in valid range (0, 100]"),
    (shape(), f"{FIT}.scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"),
    (shape((50, 1), (50, 2)),
     f"{FIT}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 50: "
     "values must be sorted in increasing order"),
    (shape((0, 0), (101, 10)),
     f"{FIT}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 101: not in valid range [0, 100]"),
    (shape((0, 11)), f"{FIT}.scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: "
                     "not in valid range [0, 10]"),
    (shape((0, 1), type_="MostAllocated"),
     f"{FIT}.scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"),
    (edit("balanced-0-weight", "2"), "profiles[0].pluginConfig[0].args.resources[0].weight: Invalid value: 2: must be 1"),
    (plugin_off("PrioritySort", "queue_sort"),
     'profiles[0].plugins.queueSort: only one queue sort plugin required for profile with scheduler name '
     '"default-scheduler", but got 0'),
    (plugin_off("DefaultBinder", "bind"),
     'profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "default-scheduler"'),
    (edit("added_affinity", "requiredDuringSchedulingIgnoredDuringExecution:\n  nodeSelectorTerms:\n"
                            "  - matchExpressions:\n    - {key: zone, operator: Near, values: [a]}\n"),
     "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     '.matchExpressions[0].operator: Unsupported value: "Near": supported values: "In", "NotIn", "Exists", '
     '"DoesNotExist", "Gt", "Lt"'),
    (lambda d: d.__setitem__(row_of(d, "ImageLocality") + "-weight", str(1 << 31)),
     "profiles[0].plugins.score.enabled[6].weight: cannot unmarshal number into Go value of type int32"),
    (edit("hard_pod_affinity_weight", "101"),
     "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"),
    (edit("spread_default_constraints", "- {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n"),
     'profiles[0].pluginConfig[0].args.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
    (edit("ignored_resource_groups", "example.com/x"),
     f"{FIT}.ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'"),
]


@pytest.mark.parametrize("change, problem", BAD_EDITS, ids=[p.split(":")[0] + ":" + p.split(":")[1][:25] for _, p in BAD_EDITS])
def test_a_bad_edit_is_refused_with_kube_schedulers_path_and_wording_and_nothing_is_saved(staff, change, problem):
    data = form_data(staff, PROFILE)
    change(data)
    data["reason"] = "a bad idea"
    response = save(staff, data)
    assert response.status_code == 200
    assert problem in problems_on(response)
    assert not SchedulerConfigVersion.objects.exists()


def test_each_problem_says_which_part_of_the_page_it_points_at(staff):
    data = form_data(staff, PROFILE)
    data.update({"fit-0-weight": "101", "balanced-0-weight": "2", "percentage_of_nodes_to_score": "-5",
                 "pod_initial_backoff_seconds": "0", "reason": "several mistakes"})
    del data[row_of(data, "DefaultBinder") + "-bind"]
    response = save(staff, data)
    assert sorted(where_on(response)) == sorted(["profile", "plugins table", "NodeResourcesBalancedAllocation args",
                                                 "NodeResourcesFit args", "whole configuration"])


def test_a_change_needs_a_reason(staff):
    data = form_data(staff, PROFILE)
    data["reason"] = ""
    response = save(staff, data)
    assert response.status_code == 200 and "This field is required." in response.content.decode()
    assert not SchedulerConfigVersion.objects.exists()


def test_a_form_opened_before_another_save_is_refused_rather_than_undoing_it(staff):
    data = form_data(staff, PROFILE)
    config_version_create(config=default_config(), reason="someone else, meanwhile")
    data["reason"] = "mine"
    response = save(staff, data)
    assert problems_on(response) == ["version 1 was saved while you edited version 0; reload the page and make your change again"]
    assert SchedulerConfigVersion.objects.count() == 1


def test_a_profile_is_added_and_removed_and_the_last_one_cannot_be_removed(staff):
    data = form_data(staff, BASE + "profiles/add/")
    data.update({"scheduler_name": "batch", "reason": "a second scheduler"})
    assert save(staff, data, BASE + "profiles/add/").status_code == 302
    assert [p.scheduler_name for p in config_active()[1].profiles] == ["default-scheduler", "batch"]

    data = form_data(staff, BASE + "profiles/add/")
    data.update({"scheduler_name": "batch", "reason": "twice"})
    assert problems_on(save(staff, data, BASE + "profiles/add/")) == [
        "profiles[2].schedulerName: Duplicate value: profiles[1].schedulerName"]

    data = form_data(staff, BASE + "profiles/batch/")
    data.update({"delete": "on", "reason": "not needed"})
    assert save(staff, data, BASE + "profiles/batch/").status_code == 302
    data = form_data(staff, PROFILE)
    data.update({"delete": "on", "reason": "remove everything"})
    assert problems_on(save(staff, data)) == ["profiles: Required value: the last profile cannot be removed"]
    assert [p.scheduler_name for p in config_active()[1].profiles] == ["default-scheduler"]


def test_the_profiles_page_lists_the_active_versions_profiles_with_edit_links(staff):
    config_version_create(config=load_config(MULTI), reason="two profiles")
    html = staff.get(BASE + "profiles/").content.decode()
    assert "Profiles of version 1 (active)" in html
    assert f'href="{BASE}profiles/packer/"' in html and "RequestedToCapacityRatio" in html
    assert staff.get(BASE + "profiles/nobody/").status_code == 404


def test_a_staff_user_without_the_add_permission_can_view_but_not_edit(staff):
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_schedulerconfigversion"))
    client = Client()
    client.force_login(viewer)
    assert client.get(BASE + "profiles/").status_code == 200
    assert client.get(PROFILE).status_code == 403
    assert client.post(PROFILE, {"reason": "x"}).status_code == 403
    assert client.get(BASE + "import/").status_code == 403


def test_a_non_staff_user_is_sent_to_the_login_page():
    client = Client()
    client.force_login(User.objects.create_user("pat", password="pw"))
    for url in (PROFILE, BASE + "profiles/", BASE + "import/", BASE + "export/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert not SchedulerConfigVersion.objects.exists()


# ---- history: who, when, why and the diff ---------------------------------------------------

def test_a_versions_page_shows_who_why_and_a_diff_to_the_previous_version(staff):
    data = form_data(staff, PROFILE)
    data["fit_type"] = MOST_ALLOCATED
    data["reason"] = "bin-pack"
    save(staff, data)
    version = SchedulerConfigVersion.objects.get()
    html = staff.get(f"{BASE}{version.pk}/change/").content.decode()
    assert "bin-pack" in html and "ops" in html
    assert '<span class="diff-file">--- version 0</span>' in html
    assert '<span class="diff-add">+        type: MostAllocated</span>' in html
    assert '<span class="diff-add">+  pluginConfig:</span>' in html
    assert '<a href="/whatif/?version=1">' in html


def _three_versions():
    """Versions 1 (MostAllocated), 2 (percentageOfNodesToScore 40 too) and 3 (back to the default)."""
    packed = load_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                         "- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
                         "        type: MostAllocated\n")
    config_version_create(config=packed, reason="pack")
    packed.percentage_of_nodes_to_score = 40
    config_version_create(config=packed, reason="fewer nodes")
    return config_version_create(config=default_config(), reason="back")


@pytest.mark.parametrize("compare, against, present, absent", [
    (None, 2, ["-        type: MostAllocated", "-percentageOfNodesToScore: 40"], []),  # the previous by default
    ("1", 1, ["-        type: MostAllocated"], ["percentageOfNodesToScore: 40"]),
    ("0", 0, ["none: version 3 has the same configuration as version 0"], ['class="config-diff"']),
    ("2", 2, ["-percentageOfNodesToScore: 40"], []),
])
def test_a_versions_page_diffs_against_the_version_picked(staff, compare, against, present, absent):
    version = _three_versions()
    html = unescape(staff.get(f"{BASE}{version.pk}/change/", {"compare": compare} if compare else {}).content.decode())
    assert f"Changes from version {against} to version 3" in html
    assert re.search(rf'<option value="{against}" selected>', html)
    assert re.findall(r'<option value="(\d+)"', html) == ["0", "1", "2"]  # every other version can be picked
    if "none:" not in present[0]:
        assert f"--- version {against}</span>" in html and "+++ version 3</span>" in html
    for text in present:
        assert text in html
    for text in absent:
        assert text not in html


@pytest.mark.parametrize("compare, error", [("99", "no version 99"), ("x", "'x' is not a version number")])
def test_a_versions_page_says_when_the_version_to_compare_with_does_not_exist(staff, compare, error):
    version = _three_versions()
    response = staff.get(f"{BASE}{version.pk}/change/", {"compare": compare})
    assert response.status_code == 200
    html = unescape(response.content.decode())
    assert f'<ul class="errorlist"><li>{error}</li></ul>' in html and 'class="config-diff"' not in html


def test_a_later_version_can_be_compared_with_too(staff):
    _three_versions()
    first = SchedulerConfigVersion.objects.get(number=1)
    html = unescape(staff.get(f"{BASE}{first.pk}/change/", {"compare": "2"}).content.decode())
    assert "--- version 2</span>" in html and "+++ version 1</span>" in html
    assert "-percentageOfNodesToScore: 40" in html


# ---- import and export as admin pages -----------------------------------------------------------

def test_admin_import_saves_a_file_as_a_new_version_with_warnings_shown(staff):
    upload = _upload("tuned.yaml", MULTI + "parallelism: 8\n")
    response = staff.post(BASE + "import/", {"file": upload, "reason": "from upstream"}, follow=True)
    assert response.status_code == 200
    version = SchedulerConfigVersion.objects.get()
    assert (version.reason, version.created_by.username) == ("from upstream", "ops")
    assert config_active()[1] == load_config(MULTI)
    assert "Warning: tuned.yaml: parallelism: not modelled by schedboard; ignored" in response.content.decode()


def test_admin_import_of_a_bad_file_names_each_problem_with_its_path_and_changes_nothing(staff):
    config_version_create(config=default_config(), reason="before")
    bad = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 101\n"
           "profiles:\n- schedulerName: a\n  plugins:\n    bind:\n      disabled: [{name: DefaultBinder}]\n")
    response = staff.post(BASE + "import/", {"file": _upload("bad.yaml", bad), "reason": "oops"})
    assert problems_on(response) == [
        'bad.yaml: profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "a"',
        "bad.yaml: percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
    ]
    assert list(SchedulerConfigVersion.objects.values_list("number", flat=True)) == [1]


HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize("text, problem", [
    (HEADER + "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
     "hostile.yaml: a: YAML anchors are not allowed (&a) (line 3, column 4)"),
    (HEADER + "profiles: " + "[" * 2000 + "]" * 2000 + "\n",
     "hostile.yaml: profiles" + "[0]" * 99 + ": nested more than 100 levels deep (line 3, column 110)"),
    (HEADER + "percentageOfNodesToScore: " + "1" * 5000 + "\n",
     "hostile.yaml: percentageOfNodesToScore: integer with more than 4300 digits (line 3, column 27)"),
    (HEADER + "percentageOfNodesToScore: .inf\n",
     "hostile.yaml: percentageOfNodesToScore: .inf: not a finite number (JSON has no infinity or NaN) (line 3, column 27)"),
    (HEADER + "profiles: !!set {a}\n", "hostile.yaml: profiles: YAML tag !!set is not allowed: only strings, numbers, "
                                      "booleans, null, lists and maps (line 3, column 11)"),
    (HEADER + "profiles:\n- schedulerName: a\n  schedulerName: b\n",
     'hostile.yaml: profiles[0]: key "schedulerName" already set in map (line 5, column 3)'),
])
def test_admin_import_of_hostile_yaml_shows_the_problem_in_the_form_and_saves_nothing(staff, text, problem):
    config_version_create(config=default_config(), reason="before")
    response = staff.post(BASE + "import/", {"file": _upload("hostile.yaml", text), "reason": "oops"})
    assert response.status_code == 200  # the form again, with the problem: never a server error
    assert problems_on(response) == [problem]
    assert list(SchedulerConfigVersion.objects.values_list("number", flat=True)) == [1]


def test_admin_profile_edit_refuses_an_alias_in_added_affinity(staff):
    data = form_data(staff, PROFILE)
    data.update(added_affinity="a: &x [1]\nb: *x\n", reason="bomb")
    response = save(staff, data)
    assert response.status_code == 200
    assert "a: YAML anchors are not allowed (&amp;x) (line 1, column 4)" in response.content.decode()
    assert not SchedulerConfigVersion.objects.exists()


def test_admin_export_downloads_the_active_version_and_the_action_any_version(staff):
    config_version_create(config=load_config(MULTI), reason="one")
    config_version_create(config=default_config(), reason="two")
    response = staff.get(BASE + "export/")
    assert response["Content-Disposition"] == 'attachment; filename="scheduler-config-v2.yaml"'
    assert response.content.decode() == dump_config(default_config())
    first = SchedulerConfigVersion.objects.get(number=1)
    response = staff.post(BASE, {"action": "export_version", "_selected_action": [first.pk]})
    assert response["Content-Disposition"] == 'attachment; filename="scheduler-config-v1.yaml"'
    assert load_config(response.content.decode()) == load_config(MULTI)


def test_export_import_export_through_the_admin_is_byte_identical(staff):
    config_version_create(config=load_config(MULTI), reason="start")
    first = staff.get(BASE + "export/").content.decode()
    staff.post(BASE + "import/", {"file": _upload("first.yaml", first), "reason": "round trip"})
    assert SchedulerConfigVersion.objects.count() == 2
    assert staff.get(BASE + "export/").content.decode() == first


def _upload(name: str, text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile
    return SimpleUploadedFile(name, text.encode(), content_type="application/yaml")
