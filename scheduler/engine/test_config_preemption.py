"""DefaultPreemption in the configuration: at postFilter in the default profile, its args decoded, defaulted and
validated with upstream's words and paths, exported, stored and built."""

from __future__ import annotations

import json
import textwrap

import pytest

from .config import ConfigError, default_config, dump_config, load_config, profile_from_dict, profile_to_dict
from .plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load(body: str):
    return load_config(HEADER + textwrap.dedent(body), "test.yaml")


def preemption_args(body: str) -> str:
    return ("profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n"
            + textwrap.indent(textwrap.dedent(body), "      "))


def test_the_default_profile_runs_default_preemption_at_post_filter():
    profile = load("").profiles[0]
    assert profile.post_filters == ["DefaultPreemption"]
    assert load("").warnings == []
    built = profile.build()
    assert [p.name for p in built.post_filters] == ["DefaultPreemption"]
    assert built.post_filters[0].args == DefaultPreemptionArgs(10, 100)


@pytest.mark.parametrize("plugins", [
    "postFilter:\n  disabled:\n  - name: DefaultPreemption\n",
    "multiPoint:\n  disabled:\n  - name: DefaultPreemption\n",
    "postFilter:\n  disabled:\n  - name: '*'\n",
])
def test_disabling_default_preemption_leaves_no_post_filter_and_exports_so(plugins):
    cfg = load("profiles:\n- plugins:\n" + textwrap.indent(plugins, "    "))
    assert cfg.profiles[0].post_filters == [] and cfg.warnings == []
    assert cfg.profiles[0].build().post_filters == []
    again = load_config(dump_config(cfg), "dumped.yaml")
    assert again == cfg and again.profiles[0].post_filters == []


def test_default_preemption_at_another_extension_point_is_refused_as_upstream():
    with pytest.raises(ConfigError) as info:
        load("profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: DefaultPreemption\n")
    assert info.value.problems == [("profiles[0].plugins.filter.enabled[0]",
                                    'plugin "DefaultPreemption" does not extend FilterPlugin plugin')]


def test_its_args_are_decoded_defaulted_exported_and_built():
    cfg = load(preemption_args("minCandidateNodesPercentage: 25\n"))
    args = cfg.profiles[0].plugin_args["DefaultPreemption"]
    # An unset field gets upstream's default (SetDefaults_DefaultPreemptionArgs).
    assert args == DefaultPreemptionArgs(min_candidate_nodes_percentage=25, min_candidate_nodes_absolute=100)
    text = dump_config(cfg)
    assert "minCandidateNodesPercentage: 25\n" in text and "minCandidateNodesAbsolute: 100\n" in text
    assert load_config(text, "dumped.yaml") == cfg
    plugin = cfg.profiles[0].build().post_filters[0]
    assert isinstance(plugin, DefaultPreemption) and plugin.calculate_num_candidates(1000) == 250


def test_an_explicit_zero_stays_zero_when_the_other_is_set():
    cfg = load(preemption_args("minCandidateNodesPercentage: 0\nminCandidateNodesAbsolute: 5\n"))
    assert cfg.profiles[0].plugin_args["DefaultPreemption"] == DefaultPreemptionArgs(0, 5)


ARGS = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize("body, expected", [
    ("minCandidateNodesPercentage: 101\n",
     [(f"{ARGS}.minCandidateNodesPercentage", "Invalid value: 101: not in valid range [0, 100]")]),
    ("minCandidateNodesPercentage: -1\n",
     [(f"{ARGS}.minCandidateNodesPercentage", "Invalid value: -1: not in valid range [0, 100]")]),
    ("minCandidateNodesAbsolute: -1\n",
     [(f"{ARGS}.minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)")]),
    ("minCandidateNodesPercentage: 0\nminCandidateNodesAbsolute: 0\n",
     [(f"{ARGS}.minCandidateNodesPercentage", "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"),
      (f"{ARGS}.minCandidateNodesAbsolute", "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage")]),
    ("minCandidateNodes: 3\n",
     [(f"{ARGS}.minCandidateNodes", f'strict decoding error: unknown field "{ARGS}.minCandidateNodes"')]),
    ("minCandidateNodesAbsolute: lots\n",
     [(f"{ARGS}.minCandidateNodesAbsolute", None)]),
])
def test_bad_args_are_refused_with_upstreams_paths_and_words(body, expected):
    with pytest.raises(ConfigError) as info:
        load(preemption_args(body))
    got = info.value.problems
    assert [p for p, _ in got] == [p for p, _ in expected]
    for (_, message), (_, want) in zip(got, expected):
        if want is not None:
            assert message == want


def test_the_stored_form_keeps_post_filters_and_a_version_stored_before_reads_as_upstreams_default():
    cfg = load(preemption_args("minCandidateNodesAbsolute: 7\n"))
    data = json.loads(json.dumps(profile_to_dict(cfg.profiles[0])))
    assert profile_from_dict(data) == cfg.profiles[0]
    older = {k: v for k, v in profile_to_dict(default_config().profiles[0]).items() if k != "post_filters"}
    assert profile_from_dict(older).post_filters == ["DefaultPreemption"]
    none = dict(data, post_filters=[])
    assert profile_from_dict(none).post_filters == []
