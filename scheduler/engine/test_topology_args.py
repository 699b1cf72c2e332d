"""PodTopologySpreadArgs and InterPodAffinityArgs through the config loader: defaults, upstream's validation
words and field paths (validation_pluginargs.go), the v1 form they dump to, and the plugins built from them."""

import textwrap

import pytest

from .config import ConfigError, default_config, dump_config, load_config
from .plugins.inter_pod_affinity import InterPodAffinityArgs
from .plugins.pod_topology_spread import SYSTEM_DEFAULT_CONSTRAINTS, PodTopologySpreadArgs
from .pods import TopologySpreadConstraint

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
PATH = "profiles[0].pluginConfig[0].args"


def load_args(name: str, args: str):
    body = f"profiles:\n- pluginConfig:\n  - name: {name}\n    args:\n" + textwrap.indent(textwrap.dedent(args), "      ")
    return load_config(HEADER + body, "test.yaml")


def test_the_default_profile_builds_both_plugins_with_upstreams_defaults():
    profile = default_config().profiles[0]
    assert profile.args_for("PodTopologySpread") == PodTopologySpreadArgs(defaulting_type="System")
    assert profile.args_for("InterPodAffinity") == InterPodAffinityArgs(hard_pod_affinity_weight=1)
    built = profile.build()
    spread = next(p for p in built.filters if p.name == "PodTopologySpread")
    assert spread.default_constraints == SYSTEM_DEFAULT_CONSTRAINTS


def test_an_empty_args_object_defaults_to_system_defaulting_and_hard_weight_one():
    assert load_args("PodTopologySpread", "{}\n").profiles[0].plugin_args["PodTopologySpread"] == PodTopologySpreadArgs()
    ipa = load_args("InterPodAffinity", "{}\n").profiles[0].plugin_args["InterPodAffinity"]
    assert ipa == InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False)
    # An explicit zero is kept (a pointer upstream: only nil is defaulted).
    ipa = load_args("InterPodAffinity", "hardPodAffinityWeight: 0\nignorePreferredTermsOfExistingPods: true\n")
    assert ipa.profiles[0].plugin_args["InterPodAffinity"] == InterPodAffinityArgs(0, True)


@pytest.mark.parametrize("name, args, problems", [
    ("InterPodAffinity", "hardPodAffinityWeight: 101\n",
     [(f"{PATH}.hardPodAffinityWeight", "Invalid value: 101: not in valid range [0, 100]")]),
    ("InterPodAffinity", "hardPodAffinityWeight: -1\n",
     [(f"{PATH}.hardPodAffinityWeight", "Invalid value: -1: not in valid range [0, 100]")]),
    ("InterPodAffinity", "ignorePreferredTermsOfExistingPods: yes please\n",
     [(f"{PATH}.ignorePreferredTermsOfExistingPods", "cannot unmarshal string into Go value of type bool")]),
    ("PodTopologySpread", "defaultingType: Sometimes\n",
     [(f"{PATH}.defaultingType", 'Unsupported value: "Sometimes": supported values: "System", "List"')]),
    ("PodTopologySpread", """\
defaultingType: System
defaultConstraints:
- maxSkew: 1
  topologyKey: zone
  whenUnsatisfiable: ScheduleAnyway
""", [(f"{PATH}.defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty')]),
    ("PodTopologySpread", """\
defaultingType: List
defaultConstraints:
- maxSkew: 0
  topologyKey: ""
  whenUnsatisfiable: Never
  labelSelector: {}
- maxSkew: 2
  topologyKey: "not a key!"
  whenUnsatisfiable: ""
- maxSkew: 1
  topologyKey: zone
  whenUnsatisfiable: DoNotSchedule
- maxSkew: 3
  topologyKey: zone
  whenUnsatisfiable: DoNotSchedule
""", [
        (f"{PATH}.defaultConstraints[0].maxSkew", "Invalid value: 0: not in valid range (0, inf)"),
        (f"{PATH}.defaultConstraints[0].topologyKey", "Required value: can not be empty"),
        (f"{PATH}.defaultConstraints[0].whenUnsatisfiable",
         'Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"'),
        (f"{PATH}.defaultConstraints[0].labelSelector",
         "Forbidden: constraint must not define a selector, as they deduced for each pod"),
        (f"{PATH}.defaultConstraints[1].topologyKey",
         "Invalid value: \"not a key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
         "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
         "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        (f"{PATH}.defaultConstraints[1].whenUnsatisfiable", "Required value: can not be empty"),
        (f"{PATH}.defaultConstraints[3]", 'Duplicate value: "{zone, DoNotSchedule}"'),
    ]),
    ("PodTopologySpread", "defaultConstraints: 3\n",
     [(f"{PATH}.defaultConstraints", "cannot unmarshal number into Go value of type []v1.TopologySpreadConstraint")]),
    ("PodTopologySpread", "defaultConstraints:\n- maxSkew: 1\n  topologyKey: zone\n  whenUnsatisfiable: DoNotSchedule\n  bogus: 1\n",
     [(f"{PATH}.defaultConstraints[0].bogus", f'strict decoding error: unknown field "{PATH}.defaultConstraints[0].bogus"')]),
])
def test_invalid_args_are_refused_with_upstreams_words(name, args, problems):
    with pytest.raises(ConfigError) as info:
        load_args(name, args)
    assert info.value.problems == problems


def test_list_defaulting_constraints_load_dump_and_load_back_the_same():
    cfg = load_args("PodTopologySpread", """\
defaultingType: List
defaultConstraints:
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: DoNotSchedule
  minDomains: 2
  nodeTaintsPolicy: Honor
""")
    args = cfg.profiles[0].plugin_args["PodTopologySpread"]
    assert args.default_constraints == (TopologySpreadConstraint(
        1, "topology.kubernetes.io/zone", "DoNotSchedule", min_domains=2, node_taints_policy="Honor"),)
    again = load_config(dump_config(cfg), "dumped.yaml")
    assert again.profiles[0].plugin_args == cfg.profiles[0].plugin_args
    ipa = load_args("InterPodAffinity", "hardPodAffinityWeight: 7\n")
    assert load_config(dump_config(ipa), "dumped.yaml").profiles[0].plugin_args == ipa.profiles[0].plugin_args
