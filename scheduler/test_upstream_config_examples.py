"""Real KubeSchedulerConfiguration v1 files (kubernetes.io's docs, kubernetes/kubernetes's scheduler_perf,
Kubernetes the Hard Way; each file names its source) import cleanly through `profiles import` and the
admin, and export → import → export is byte-identical."""

from html import escape
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from scheduler.engine.config import dump_config, load_config
from scheduler.models import SchedulerConfigVersion
from scheduler.versions.services import config_active
from scheduler.testing.cli import cli

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = Path(__file__).parent / "engine" / "testdata" / "config"
# custom_plugins.yaml enables out-of-tree plugins; upstream without them refuses it, and so do we.
IMPORTABLE = sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "custom_plugins.yaml")


def test_the_examples_include_files_from_real_repositories():
    sources = [(EXAMPLES / name).read_text().splitlines()[0] for name in IMPORTABLE]
    assert all(line.startswith(("# kubernetes.io/", "# github.com/")) for line in sources)
    assert sum("github.com/kubernetes/kubernetes" in line for line in sources) >= 2


@pytest.mark.parametrize("name", IMPORTABLE)
def test_an_upstream_example_imports_cleanly_and_round_trips_byte_identical(name, tmp_path):
    source = EXAMPLES / name
    result = cli("profiles", "import", str(source), "--reason", f"upstream example {name}")
    assert (result.code, result.out.strip()) == (0, "scheduler configuration version 1 saved and active")
    assert config_active()[1] == load_config(source.read_text())
    first = tmp_path / "first.yaml"
    assert cli("profiles", "export", "-o", str(first)).code == 0
    assert cli("profiles", "import", str(first), "--reason", "round trip").code == 0
    assert cli("profiles", "export").out == first.read_text() == dump_config(load_config(source.read_text()))


@pytest.mark.parametrize("name", IMPORTABLE)
def test_an_upstream_example_imports_cleanly_through_the_admin(name):
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("ops", "ops@example.com", "pw"))
    upload = SimpleUploadedFile(name, (EXAMPLES / name).read_bytes(), content_type="application/yaml")
    response = client.post("/admin/scheduler/schedulerconfigversion/import/", {"file": upload, "reason": name})
    assert response.status_code == 302
    assert SchedulerConfigVersion.objects.get().reason == name
    assert config_active()[1] == load_config((EXAMPLES / name).read_text())


def test_out_of_tree_plugins_are_refused_by_the_import_as_upstream_refuses_them():
    result = cli("profiles", "import", str(EXAMPLES / "custom_plugins.yaml"), "--reason", "x")
    assert result.code == 1
    assert 'ScorePlugin "MyCustomPluginA" does not exist' in result.err
    assert not SchedulerConfigVersion.objects.exists()


BAD = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 0
profiles:
- schedulerName: batch
  plugins:
    queueSort:
      disabled: [{name: PrioritySort}]
    score:
      enabled: [{name: ImageLocality, weight: 5000000000}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape: [{utilization: 60, score: 5}, {utilization: 40, score: 11}]
"""
BAD_PROBLEMS = [
    "profiles[0].plugins.score.enabled[0].weight: cannot unmarshal number into Go value of type int32",
    'profiles[0].plugins.queueSort: only one queue sort plugin required for profile with scheduler name "batch", but got 0',
    "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: "
    "Invalid value: 40: values must be sorted in increasing order",
    "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].score: "
    "Invalid value: 11: not in valid range [0, 10]",
    "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
]


def test_one_bad_file_gets_the_same_problems_from_import_admin_import_and_explain(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    expected = [f"{bad}: {p}" for p in BAD_PROBLEMS]

    imported = cli("profiles", "import", str(bad), "--reason", "x")
    assert (imported.code, imported.err.splitlines()) == (1, expected)

    case = Path(__file__).parent / "testdata" / "explain" / "default"
    explained = cli("explain", "--cluster", str(case / "cluster.yaml"), "--pod", str(case / "pod.yaml"),
                    "--profile", str(bad))
    assert (explained.code, explained.err.splitlines()) == (1, expected)

    client = Client()
    client.force_login(get_user_model().objects.create_superuser("ops", "ops@example.com", "pw"))
    upload = SimpleUploadedFile("bad.yaml", BAD.encode(), content_type="application/yaml")
    html = client.post("/admin/scheduler/schedulerconfigversion/import/", {"file": upload, "reason": "x"}).content.decode()
    for problem in BAD_PROBLEMS:
        assert escape(f"bad.yaml: {problem}") in html
    assert not SchedulerConfigVersion.objects.exists()
