"""SchedulingGates at PreEnqueue: on in the default profile as upstream's getDefaultPlugins, kept through
load, export and the stored form; disabling it is exported back; it extends no other point."""

import pytest
import yaml

from scheduler.engine.config import (ConfigError, config_from_dict, config_to_dict, default_profile, dump_config,
                                     load_config)

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_the_default_profile_runs_scheduling_gates_at_pre_enqueue_without_a_warning():
    assert default_profile().pre_enqueue == ("SchedulingGates",)
    cfg = load_config(HEAD + "profiles:\n- schedulerName: default-scheduler\n")
    assert cfg.profiles[0].pre_enqueue == ("SchedulingGates",) and cfg.warnings == []
    explicit = load_config(HEAD + "profiles:\n- schedulerName: a\n  plugins:\n    preEnqueue:\n"
                                  "      enabled:\n      - name: SchedulingGates\n")
    assert explicit.profiles[0].pre_enqueue == ("SchedulingGates",) and explicit.warnings == []
    assert "plugins" not in yaml.safe_load(dump_config(cfg))["profiles"][0]  # upstream's default: nothing to say


@pytest.mark.parametrize("plugins", [
    "    preEnqueue:\n      disabled:\n      - name: SchedulingGates\n",
    "    multiPoint:\n      disabled:\n      - name: SchedulingGates\n",
    "    preEnqueue:\n      disabled:\n      - name: '*'\n",
])
def test_disabling_scheduling_gates_loads_with_a_warning_and_exports_and_stores_back(plugins):
    cfg = load_config(HEAD + "profiles:\n- schedulerName: a\n  plugins:\n" + plugins)
    assert cfg.profiles[0].pre_enqueue == ()
    assert cfg.warnings == ["profiles[0].plugins.preEnqueue: SchedulingGates disabled; schedboard still holds gated "
                            "pods (the API server refuses to bind them)"]
    exported = yaml.safe_load(dump_config(cfg))["profiles"][0]["plugins"]
    assert exported == {"preEnqueue": {"disabled": [{"name": "SchedulingGates"}]}}
    assert load_config(dump_config(cfg)).profiles[0].pre_enqueue == ()
    assert config_from_dict(config_to_dict(cfg)).profiles[0].pre_enqueue == ()


def test_scheduling_gates_extends_no_other_point():
    with pytest.raises(ConfigError) as info:
        load_config(HEAD + "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n"
                           "      - name: SchedulingGates\n")
    assert info.value.problems == [("profiles[0].plugins.filter.enabled[0]",
                                    'plugin "SchedulingGates" does not extend FilterPlugin plugin')]
