"""Versioned scheduler configuration on real Postgres: services, constraints, the profiles command,
the admin, and a worker that follows the active version from one batch to the next."""

import re
import subprocess
import sys
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.test import Client

from scheduler import loop
from scheduler.engine.config import (ConfigError, ProfileConfig, SchedulerConfig, config_to_dict, default_config,
                                     default_profile, dump_config, load_config)
from scheduler.engine.plugin_args import (MOST_ALLOCATED, NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs,
                                          ResourceSpec, ScoringStrategy)
from scheduler.models import Attempt, SchedulerConfigVersion
from scheduler.versions.services import config_active, config_version_create, config_version_restore
from scheduler.versions.profiles import active_version_number, initial_config
from scheduler.testing.cli import REPO, cli, manage, manage_env
from scheduler.testing.loop import apply, node, pod

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

User = get_user_model()


def most_allocated(**kw) -> SchedulerConfig:
    profile = default_profile()
    profile.plugin_args["NodeResourcesFit"] = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type=MOST_ALLOCATED))
    return SchedulerConfig(profiles=[profile], **kw)


MOST_ALLOCATED_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 2}
        - {name: memory, weight: 1}
- schedulerName: batch-scheduler
  percentageOfNodesToScore: 10
"""


# ---- services ---------------------------------------------------------------------------

def test_with_no_saved_version_the_initial_configuration_is_version_0():
    assert config_active() == (0, default_config())
    assert active_version_number() == 0


def test_with_schedboard_config_set_and_no_saved_version_the_file_is_version_0(tmp_path, settings):
    path = tmp_path / "initial.yaml"
    path.write_text(MOST_ALLOCATED_YAML)
    settings.SCHEDBOARD_CONFIG = str(path)
    initial_config.cache_clear()
    try:
        assert config_active() == (0, load_config(MOST_ALLOCATED_YAML))
        config_version_create(config=default_config(), reason="a saved version wins over the file")
        assert config_active() == (1, default_config())
    finally:
        initial_config.cache_clear()


def test_each_save_is_a_new_active_version_and_the_previous_one_stays_as_it_was():
    alice = User.objects.create_user("alice")
    first = config_version_create(config=most_allocated(), reason="pack nodes", user=alice)
    second = config_version_create(config=default_config(), reason="  back to spreading \n")
    assert (first.number, second.number) == (1, 2)
    rows = {v.number: v for v in SchedulerConfigVersion.objects.all()}
    assert [rows[1].active, rows[2].active] == [False, True]
    assert rows[1].created_by == alice and rows[2].created_by is None
    assert rows[2].reason == "back to spreading"
    assert rows[1].config == config_to_dict(most_allocated())
    assert config_active() == (2, default_config())


@pytest.mark.parametrize("config, problem", [
    (SchedulerConfig(profiles=[default_profile()], percentage_of_nodes_to_score=101),
     ("percentageOfNodesToScore", "Invalid value: 101: not in valid range [0-100]")),
    (SchedulerConfig(profiles=[ProfileConfig(**{**default_profile().__dict__, "percentage_of_nodes_to_score": -1})]),
     ("profiles[0].percentageOfNodesToScore", "Invalid value: -1: not in valid range [0-100]")),
    (SchedulerConfig(profiles=[default_profile()], pod_initial_backoff_seconds=0),
     ("podInitialBackoffSeconds", "Invalid value: 0: must be greater than 0")),
    (SchedulerConfig(profiles=[default_profile()], pod_initial_backoff_seconds=5, pod_max_backoff_seconds=4),
     ("podMaxBackoffSeconds", "Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds")),
    (SchedulerConfig(profiles=[default_profile(), default_profile()]),
     ("profiles[1].schedulerName", "Duplicate value: profiles[0].schedulerName")),
    (SchedulerConfig(profiles=[ProfileConfig(**{**default_profile().__dict__, "plugin_args": {
        "NodeResourcesFit": NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(resources=(ResourceSpec("cpu", 101),)))}})]),
     ("profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
      "Invalid value: 101: resource weight of cpu not in valid range (0, 100]")),
    (SchedulerConfig(profiles=[ProfileConfig(**{**default_profile().__dict__, "plugin_args": {
        "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs(resources=(ResourceSpec("cpu", 2),))}})]),
     ("profiles[0].pluginConfig[0].args.resources[0].weight", "Invalid value: 2: must be 1")),
], ids=["global-percentage", "profile-percentage", "initial-backoff", "max-backoff", "duplicate-name",
        "fit-resource-weight", "balanced-weight"])
def test_a_bad_configuration_is_refused_with_kube_schedulers_wording_and_nothing_changes(config, problem):
    config_version_create(config=most_allocated(), reason="before")
    with pytest.raises(ConfigError) as exc:
        config_version_create(config=config, reason="a bad idea")
    assert problem in exc.value.problems
    assert list(SchedulerConfigVersion.objects.values_list("number", "active")) == [(1, True)]


@pytest.mark.parametrize("reason", ["", "   ", "\n\t"])
def test_a_change_without_a_reason_is_refused(reason):
    with pytest.raises(ConfigError) as exc:
        config_version_create(config=most_allocated(), reason=reason)
    assert exc.value.problems == [("reason", "Required value: say why the configuration changes")]
    assert not SchedulerConfigVersion.objects.exists()


def test_restoring_an_old_version_saves_it_again_as_a_new_active_version():
    bob = User.objects.create_user("bob")
    config_version_create(config=most_allocated(), reason="pack")
    config_version_create(config=default_config(), reason="spread")
    restored = config_version_restore(number=1, reason="packing was better", user=bob)
    assert (restored.number, restored.active, restored.created_by, restored.reason) == (3, True, bob, "packing was better")
    assert restored.config == SchedulerConfigVersion.objects.get(number=1).config
    assert config_active() == (3, most_allocated())
    assert config_version_restore(number=0, reason="the initial one").config == config_to_dict(default_config())
    with pytest.raises(SchedulerConfigVersion.DoesNotExist):
        config_version_restore(number=99, reason="no such version")


def test_concurrent_saves_get_consecutive_numbers_and_one_active_version():
    barrier = threading.Barrier(4)
    errors = []

    def save(i):
        try:
            barrier.wait()
            config_version_create(config=default_config(), reason=f"saver {i}")
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(SchedulerConfigVersion.objects.values_list("number", flat=True)) == [1, 2, 3, 4]
    assert list(SchedulerConfigVersion.objects.filter(active=True).values_list("number", flat=True)) == [4]


# ---- database constraints: what the service refuses, Postgres refuses too --------------------

@pytest.mark.parametrize("fields", [
    {"number": 1, "reason": ""},
    {"number": 1, "reason": " \n\t "},
    {"number": 0, "reason": "zero is the initial configuration"},
], ids=["empty-reason", "blank-reason", "number-zero"])
def test_the_database_refuses_a_version_the_service_would_refuse(fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        SchedulerConfigVersion.objects.create(config=config_to_dict(default_config()), **fields)


def test_the_database_refuses_a_second_active_version_and_a_reused_number():
    valid = config_to_dict(default_config())
    SchedulerConfigVersion.objects.create(number=1, config=valid, reason="one", active=True)
    with pytest.raises(IntegrityError, match="config_version_one_active"), transaction.atomic():
        SchedulerConfigVersion.objects.create(number=2, config=valid, reason="two", active=True)
    with pytest.raises(IntegrityError, match="number"), transaction.atomic():
        SchedulerConfigVersion.objects.create(number=1, config=valid, reason="again")
    SchedulerConfigVersion.objects.create(number=2, config=valid, reason="inactive is fine")


# ---- manage.py profiles -------------------------------------------------------------------

def test_export_with_no_saved_version_writes_the_initial_configuration():
    result = cli("profiles", "export")
    assert result.code == 0 and result.out == dump_config(default_config())
    assert load_config(result.out) == default_config()


def test_export_import_export_is_byte_identical(tmp_path):
    source = tmp_path / "in.yaml"
    source.write_text(MOST_ALLOCATED_YAML)
    assert cli("profiles", "import", str(source), "--reason", "pack batch nodes").code == 0
    first = tmp_path / "first.yaml"
    assert cli("profiles", "export", "-o", str(first)).code == 0
    assert load_config(first.read_text()) == load_config(MOST_ALLOCATED_YAML)
    result = cli("profiles", "import", str(first), "--reason", "round trip")
    assert (result.code, result.out.strip()) == (0, "scheduler configuration version 2 saved and active")
    second = cli("profiles", "export", "-o", "-").out
    assert second == first.read_text()
    assert SchedulerConfigVersion.objects.get(number=1).config == SchedulerConfigVersion.objects.get(number=2).config


def test_a_bad_import_names_each_problem_with_its_field_path_and_changes_nothing(tmp_path):
    config_version_create(config=most_allocated(), reason="before")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "percentageOfNodesToScore: 101\npodInitialBackoffSeconds: 0\nprofiles:\n- schedulerName: a\n"
                   "- schedulerName: a\n")
    result = cli("profiles", "import", str(bad), "--reason", "oops")
    assert result.code == 1 and result.out == ""
    assert result.err.splitlines() == [
        f"{bad}: profiles[1].schedulerName: Duplicate value: profiles[0].schedulerName",
        f"{bad}: percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        f"{bad}: podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ]
    assert list(SchedulerConfigVersion.objects.values_list("number", "active")) == [(1, True)]


def test_import_warns_about_fields_schedboard_does_not_model(tmp_path):
    f = tmp_path / "extra.yaml"
    f.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 "parallelism: 32\nleaderElection: {leaderElect: false}\n")
    result = cli("profiles", "import", str(f), "--reason", "upstream file")
    assert result.code == 0
    assert result.err.splitlines() == [f"Warning: {f}: parallelism: not modelled by schedboard; ignored",
                                       f"Warning: {f}: leaderElection: not modelled by schedboard; ignored"]


def test_import_requires_a_reason_and_a_readable_file(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text(MOST_ALLOCATED_YAML)
    result = cli("profiles", "import", str(f), "--reason", " ")
    assert result.code == 1 and result.err.strip() == f"{f}: reason: Required value: say why the configuration changes"
    assert cli("profiles", "import", str(tmp_path / "missing.yaml"), "--reason", "x").code == 1
    assert not SchedulerConfigVersion.objects.exists()


def test_history_lists_versions_newest_first_with_who_and_why():
    assert cli("profiles", "history").out.strip() == "no saved versions: version 0 (the initial configuration) is active"
    config_version_create(config=most_allocated(), reason="pack\nnodes", user=User.objects.create_user("carol"))
    config_version_create(config=default_config(), reason="spread")
    ages = re.compile(r"(?<=   )\d+s(?=\s)")  # seconds old, whatever the box's speed
    assert [ages.sub("Ns", line) for line in cli("profiles", "history").out.splitlines()] == [
        "VERSION   ACTIVE   AGE   BY      REASON",
        "2         *        Ns    (cli)   spread",
        "1                  Ns    carol   pack nodes",
    ]


def test_import_from_a_real_command_line_exits_1_on_a_bad_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npodMaxBackoffSeconds: -1\n")
    result = manage("profiles", "import", str(bad), "--reason", "bad")
    assert result.code == 1 and "podMaxBackoffSeconds: Invalid value: -1" in result.err and "Traceback" not in result.err
    ok = manage("profiles", "import", "-", "--reason", "from stdin", stdin=MOST_ALLOCATED_YAML)
    assert ok.code == 0 and active_version_number() == 1


CONFIG_HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize("text, problem", [
    (CONFIG_HEADER + "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n",
     "a: YAML anchors are not allowed (&a) (line 3, column 4)"),
    (CONFIG_HEADER + "profiles:\n- pluginConfig: " + "{a: " * 500 + "1" + "}" * 500 + "\n",
     "profiles[0].pluginConfig" + ".a" * 97 + ": nested more than 100 levels deep (line 4, column 405)"),
    (CONFIG_HEADER + "podMaxBackoffSeconds: " + "9" * 4301 + "\n",
     "podMaxBackoffSeconds: integer with more than 4300 digits (line 3, column 23)"),
    (CONFIG_HEADER + "podMaxBackoffSeconds: -.inf\n",
     "podMaxBackoffSeconds: -.inf: not a finite number (JSON has no infinity or NaN) (line 3, column 23)"),
    (CONFIG_HEADER + "profiles:\n- schedulerName: !!binary aGVsbG8=\n",
     "profiles[0].schedulerName: YAML tag !!binary is not allowed: only strings, numbers, booleans, null, lists and maps "
     "(line 4, column 18)"),
    (CONFIG_HEADER + "kind: KubeSchedulerConfiguration\n", 'key "kind" already set in map (line 3, column 1)'),
    (CONFIG_HEADER + "? [a]\n: b\n", "map key a list or map is not a string (line 3, column 3)"),
])
def test_import_of_hostile_yaml_names_the_field_and_problem_and_changes_nothing(tmp_path, text, problem):
    config_version_create(config=most_allocated(), reason="before")
    f = tmp_path / "hostile.yaml"
    f.write_text(text)
    result = cli("profiles", "import", str(f), "--reason", "hostile")
    assert (result.code, result.out) == (1, "")
    assert result.err.splitlines() == [f"{f}: {problem}"]
    assert list(SchedulerConfigVersion.objects.values_list("number", "active")) == [(1, True)]


def test_import_of_an_alias_bomb_from_a_real_command_line_exits_1_without_a_traceback(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(CONFIG_HEADER + "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                 "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n")
    result = manage("profiles", "import", str(f), "--reason", "bomb")
    assert (result.code, result.out, result.err) == (1, "", f"{f}: a: YAML anchors are not allowed (&a) (line 3, column 4)\n")
    assert not SchedulerConfigVersion.objects.exists()


@pytest.mark.parametrize("content, stdin, error", [
    (b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n# caf\xe9\n", False,
     "not UTF-8 text (invalid continuation byte at byte 81)"),
    (b"\xff\xfeapiVersion: v1\n", False, "not UTF-8 text (invalid start byte at byte 0)"),
    (b"kind: KubeSchedulerConfiguration # \xe9t\xe9\n", True, "not UTF-8 text (invalid continuation byte at byte 35)"),
    (None, False, "No such file or directory"),
], ids=["latin-1", "utf-16-bom", "stdin", "missing"])
def test_import_of_an_unreadable_file_says_so_without_a_traceback_and_changes_nothing(tmp_path, content, stdin, error):
    config_version_create(config=most_allocated(), reason="before")
    f = tmp_path / "in.yaml"
    if content is not None and not stdin:
        f.write_bytes(content)
    name = "-" if stdin else str(f)
    proc = subprocess.run([sys.executable, str(REPO / "manage.py"), "profiles", "import", name, "--reason", "x"],
                          input=content if stdin else b"", capture_output=True, cwd=REPO, env=manage_env(), timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err
    assert err.strip() == f"error: cannot read {name}: {error}"
    assert list(SchedulerConfigVersion.objects.values_list("number", "active")) == [(1, True)]


@pytest.mark.parametrize("where, error", [
    ("missing-dir/out.yaml", "No such file or directory"),
    ("a-dir", "Is a directory"),
    ("a-file/out.yaml", "Not a directory"),
])
def test_export_to_a_path_that_cannot_be_written_says_so_without_a_traceback(tmp_path, where, error):
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("keep me\n")
    target = tmp_path / where
    result = manage("profiles", "export", "-o", str(target))
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err.strip() == f"error: cannot write {target}: {error}"
    assert (tmp_path / "a-file").read_text() == "keep me\n" and list((tmp_path / "a-dir").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "a-file"]


# ---- the worker follows the active version ------------------------------------------------

def test_a_worker_runs_a_new_version_from_its_next_batch_and_attempts_record_it():
    # Two nodes, one half full: LeastAllocated spreads to the empty one, MostAllocated packs.
    apply(node("empty", cpu="4"), node("busy", cpu="4"), pod("filler", cpu="2", nodeName="busy"))
    worker = loop.get_worker()
    apply(pod("before", cpu="1"))
    assert worker.schedule_batch().scheduled == 1
    version = config_version_create(config=most_allocated(), reason="pack")
    apply(pod("after", cpu="1"))
    assert worker.schedule_batch().scheduled == 1
    attempts = {a.pod_name: a for a in Attempt.objects.all()}
    assert (attempts["before"].profile_version, attempts["before"].node_name) == (0, "empty")
    assert (attempts["after"].profile_version, attempts["after"].node_name) == (version.number, "busy")
    assert worker.version == version.number


def test_one_batch_never_mixes_versions():
    apply(node("n1"), *[pod(f"p{i}", cpu="100m") for i in range(6)])
    worker = loop.get_worker()
    assert worker.schedule_batch(max_pods=3).popped == 3
    config_version_create(config=most_allocated(), reason="pack")
    assert worker.schedule_batch(max_pods=3).popped == 3
    by_batch = list(Attempt.objects.order_by("started_at").values_list("started_at", "profile_version"))
    versions = {}
    for started, v in by_batch:
        versions.setdefault(started, set()).add(v)
    assert sorted(tuple(v) for v in versions.values()) == [(0,), (1,)]


def test_a_new_versions_backoffs_apply_to_the_workers_queue_from_its_next_batch():
    apply(node("n1"), pod("a"), pod("b"))
    worker = loop.get_worker()
    worker.schedule_batch(max_pods=1)
    assert (worker.queue.initial_backoff, worker.queue.max_backoff) == (1.0, 10.0)
    config_version_create(config=SchedulerConfig(profiles=[default_profile()], pod_initial_backoff_seconds=3,
                                                 pod_max_backoff_seconds=30), reason="gentler retries")
    worker.schedule_batch(max_pods=1)
    assert (worker.queue.initial_backoff, worker.queue.max_backoff) == (3.0, 30.0)


def test_a_worker_given_a_configuration_keeps_it():
    config_version_create(config=most_allocated(), reason="pack")
    apply(node("n1"), pod("a"))
    worker = loop.Worker(config=default_config())
    worker.schedule_batch()
    assert Attempt.objects.get(pod_name="a").profile_version == 0 and worker.version == 0


# ---- admin ----------------------------------------------------------------------------------

@pytest.fixture
def staff_client():
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    return client


CHANGELIST = "/admin/scheduler/schedulerconfigversion/"


def test_admin_lists_versions_and_shows_each_as_the_exported_yaml(staff_client):
    config_version_create(config=most_allocated(), reason="pack nodes")
    page = staff_client.get(CHANGELIST)
    assert page.status_code == 200 and b"pack nodes" in page.content
    detail = staff_client.get(f"{CHANGELIST}{SchedulerConfigVersion.objects.get().pk}/change/")
    assert detail.status_code == 200
    assert b"type: MostAllocated" in detail.content and b"kind: KubeSchedulerConfiguration" in detail.content
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403


def _csrf(client, response) -> str:
    return re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', response.content).group(1).decode()


def test_admin_restores_a_version_as_a_new_one_after_asking_for_a_reason(staff_client):
    old = config_version_create(config=most_allocated(), reason="pack")
    config_version_create(config=default_config(), reason="spread")
    token = _csrf(staff_client, staff_client.get(CHANGELIST))
    chosen = {"action": "restore_as_new_version", "_selected_action": [str(old.pk)], "csrfmiddlewaretoken": token}
    form = staff_client.post(CHANGELIST, chosen)
    assert form.status_code == 200 and b"Restore version 1" in form.content and b'name="reason"' in form.content
    assert SchedulerConfigVersion.objects.count() == 2
    blank = staff_client.post(CHANGELIST, {**chosen, "apply": "1", "reason": "  ", "csrfmiddlewaretoken": _csrf(staff_client, form)})
    assert blank.status_code == 200 and b"This field is required" in blank.content
    assert SchedulerConfigVersion.objects.count() == 2
    done = staff_client.post(CHANGELIST, {**chosen, "apply": "1", "reason": "packing was better",
                                          "csrfmiddlewaretoken": _csrf(staff_client, form)})
    assert done.status_code == 302
    new = SchedulerConfigVersion.objects.get(active=True)
    assert (new.number, new.reason, new.created_by.username, new.config) == (3, "packing was better", "admin", old.config)


def test_admin_restore_is_refused_without_the_csrf_token(staff_client):
    old = config_version_create(config=most_allocated(), reason="pack")
    response = staff_client.post(CHANGELIST, {"action": "restore_as_new_version", "_selected_action": [str(old.pk)],
                                              "apply": "1", "reason": "sneaky"})
    assert response.status_code == 403 and SchedulerConfigVersion.objects.count() == 1


def test_a_non_staff_user_cannot_reach_the_versions():
    client = Client()
    client.force_login(User.objects.create_user("dave", password="pw"))
    response = client.get(CHANGELIST)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_the_scheduler_names_read_out_of_the_active_row_are_its_profiles_names():
    from scheduler.engine.config import SchedulerConfig, default_profile
    from scheduler.versions.profiles import active_config, scheduler_names
    from scheduler.versions.services import config_version_create

    def parsed():
        return {p.scheduler_name for p in active_config()[1].profiles}

    assert scheduler_names() == parsed() == {"default-scheduler"}  # no version saved: version 0
    config_version_create(config=SchedulerConfig(profiles=[default_profile(), default_profile("batch-scheduler")]),
                          reason="a second profile")
    assert scheduler_names() == parsed() == {"default-scheduler", "batch-scheduler"}
    config_version_create(config=SchedulerConfig(profiles=[default_profile("only-this")]), reason="one profile")
    assert scheduler_names() == parsed() == {"only-this"}
