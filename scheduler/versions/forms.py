"""The admin's profile page as forms: filled from a stored profile, turned back into a v1
KubeSchedulerProfile for versions.services.config_profile_save.

The forms only shape input (a number is a number); every rule is kube-scheduler's, applied when
the whole configuration is loaded, so the admin, `profiles import` and `explain --profile` refuse
the same things with the same words.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from django import forms

from ..engine.config import (API_VERSION, BIND_PLUGINS, DEFAULT_MULTI_POINT, MODELLED_POINTS, QUEUE_SORT_PLUGINS,
                            SCORING_STRATEGY_TYPES, ProfileConfig, SchedulerConfig, args_to_v1, plugins_to_v1,
                            default_profile)
from ..engine.plugin_args import (REQUESTED_TO_CAPACITY_RATIO, NodeAffinityArgs, NodeResourcesBalancedAllocationArgs,
                                 NodeResourcesFitArgs)
from ..engine.yaml_safe import DecodeProblem, load_yaml
from ..engine.plugins.default_preemption import DefaultPreemptionArgs
from ..engine.plugins.inter_pod_affinity import InterPodAffinityArgs
from ..engine.plugins.pod_topology_spread import LIST_DEFAULTING, SYSTEM_DEFAULTING, PodTopologySpreadArgs

# One row per plugin the page can switch: ours, plus upstream's queue sort and binder.
FORM_PLUGINS = [n for n, _ in DEFAULT_MULTI_POINT if n in MODELLED_POINTS or n in QUEUE_SORT_PLUGINS + BIND_PLUGINS]
DEFAULT_WEIGHTS = {n: w for n, w in DEFAULT_MULTI_POINT}
DEFAULT_ARGS = {"InterPodAffinity": args_to_v1("InterPodAffinity", InterPodAffinityArgs()),
                "NodeAffinity": args_to_v1("NodeAffinity", NodeAffinityArgs()),
                "PodTopologySpread": args_to_v1("PodTopologySpread", PodTopologySpreadArgs()),
                "NodeResourcesBalancedAllocation": args_to_v1("NodeResourcesBalancedAllocation",
                                                               NodeResourcesBalancedAllocationArgs()),
                "NodeResourcesFit": args_to_v1("NodeResourcesFit", NodeResourcesFitArgs()),
                "DefaultPreemption": args_to_v1("DefaultPreemption", DefaultPreemptionArgs())}


def _int(label: str, help_text: str = "", **kw) -> forms.IntegerField:
    return forms.IntegerField(label=label, required=False, help_text=help_text,
                              widget=forms.NumberInput(attrs={"style": "width: 7em"}), **kw)


class ProfileForm(forms.Form):
    based_on = forms.IntegerField(widget=forms.HiddenInput)
    scheduler_name = forms.CharField(label="schedulerName", required=False, max_length=253,
                                     help_text="pods whose spec.schedulerName is this run with this profile")
    percentage_of_nodes_to_score = _int("percentageOfNodesToScore (this profile)",
                                        "empty: the configuration's value; 0: kube-scheduler's adaptive default")
    global_percentage_of_nodes_to_score = _int("percentageOfNodesToScore (all profiles)",
                                               "empty: adaptive (50 − nodes/125 %, at least 5 %)")
    pod_initial_backoff_seconds = _int("podInitialBackoffSeconds (all profiles)", "empty: 1")
    pod_max_backoff_seconds = _int("podMaxBackoffSeconds (all profiles)", "empty: 10")
    fit_type = forms.ChoiceField(label="NodeResourcesFit scoringStrategy.type",
                                 choices=[(t, t) for t in SCORING_STRATEGY_TYPES])
    ignored_resources = forms.CharField(label="NodeResourcesFit ignoredResources", required=False,
                                        help_text="comma-separated resource names")
    ignored_resource_groups = forms.CharField(label="NodeResourcesFit ignoredResourceGroups", required=False,
                                              help_text="comma-separated resource group prefixes")
    added_affinity = forms.CharField(label="NodeAffinity addedAffinity", required=False,
                                     widget=forms.Textarea(attrs={"rows": 8, "cols": 80, "style": "font-family: monospace"}),
                                     help_text="YAML, as under args.addedAffinity in a KubeSchedulerConfiguration; "
                                               "empty: none")
    spread_defaulting_type = forms.ChoiceField(label="PodTopologySpread defaultingType",
                                               choices=[(t, t) for t in (SYSTEM_DEFAULTING, LIST_DEFAULTING)],
                                               help_text="System: upstream's (hostname maxSkew 3, zone maxSkew 5, "
                                                         "ScheduleAnyway); List: the constraints below")
    spread_default_constraints = forms.CharField(
        label="PodTopologySpread defaultConstraints", required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80, "style": "font-family: monospace"}),
        help_text="YAML, as under args.defaultConstraints (a list, no labelSelector); empty: none")
    hard_pod_affinity_weight = _int("InterPodAffinity hardPodAffinityWeight", "[0, 100]; empty: 1")
    ignore_preferred_terms_of_existing_pods = forms.BooleanField(
        label="InterPodAffinity ignorePreferredTermsOfExistingPods", required=False,
        help_text="a pod without preferred terms of its own is not scored by other pods' preferences")
    min_candidate_nodes_percentage = _int("DefaultPreemption minCandidateNodesPercentage", "[0, 100]; empty: 10")
    min_candidate_nodes_absolute = _int("DefaultPreemption minCandidateNodesAbsolute", "0 or more; empty: 100")
    delete = forms.BooleanField(label="Remove this profile", required=False)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
                             help_text="Why the configuration changes; kept with the new version.")

    def clean_spread_default_constraints(self):
        text = self.cleaned_data["spread_default_constraints"].strip()
        if not text:
            return None
        try:
            return load_yaml(text)
        except DecodeProblem as exc:
            raise forms.ValidationError(f"not accepted: {exc}") from None
        except yaml.YAMLError as exc:
            raise forms.ValidationError(f"not YAML: {exc}") from None

    def clean_added_affinity(self):
        text = self.cleaned_data["added_affinity"].strip()
        if not text:
            return None
        try:
            return load_yaml(text)
        except DecodeProblem as exc:
            raise forms.ValidationError(f"not accepted: {exc}") from None
        except yaml.YAMLError as exc:
            raise forms.ValidationError(f"not YAML: {exc}") from None


class PluginRowForm(forms.Form):
    """A plugin's row: on/off at each extension point it implements, and its score weight."""

    name = forms.CharField(widget=forms.HiddenInput)
    # Score plugins keep their own order (it can differ from the filters'); rows follow the filters.
    score_rank = forms.IntegerField(widget=forms.HiddenInput, required=False)
    queue_sort = forms.BooleanField(required=False, label="queueSort")
    filter = forms.BooleanField(required=False, label="filter")
    post_filter = forms.BooleanField(required=False, label="postFilter")
    score = forms.BooleanField(required=False, label="score")
    weight = _int("weight")  # range checked by the loader, in upstream's words (int32 decoding)
    bind = forms.BooleanField(required=False, label="bind")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        name = self.data.get(self.add_prefix("name")) if self.is_bound else self.initial.get("name")
        points = MODELLED_POINTS.get(name, frozenset())
        applies = {"queue_sort": name in QUEUE_SORT_PLUGINS, "filter": "filter" in points,
                   "post_filter": "postFilter" in points,
                   "score": "score" in points, "weight": "score" in points, "bind": name in BIND_PLUGINS}
        for field, ok in applies.items():
            if not ok:
                del self.fields[field]
        self.plugin_name = name


class ResourceForm(forms.Form):
    name = forms.CharField(required=False, max_length=253)
    weight = _int("weight")


class ShapePointForm(forms.Form):
    utilization = _int("utilization")
    score = _int("score")


PluginFormSet = forms.formset_factory(PluginRowForm, extra=0)
ResourceFormSet = forms.formset_factory(ResourceForm, extra=2, can_delete=True)
ShapeFormSet = forms.formset_factory(ShapePointForm, extra=2, can_delete=True)


class ProfilePage:
    """The bound form and formsets of one profile page."""

    def __init__(self, data=None, *, config: SchedulerConfig | None = None, profile: ProfileConfig | None = None,
                 based_on: int = 0):
        initial = _initial(config, profile, based_on) if config is not None else {}
        self.form = ProfileForm(data, initial=initial.get("form"))
        self.plugins = PluginFormSet(data, prefix="plugins", initial=initial.get("plugins", _plugin_rows(None)))
        self.fit_resources = ResourceFormSet(data, prefix="fit", initial=initial.get("fit"))
        self.shape = ShapeFormSet(data, prefix="shape", initial=initial.get("shape"))
        self.balanced_resources = ResourceFormSet(data, prefix="balanced", initial=initial.get("balanced"))

    def parts(self):
        return [self.form, self.plugins, self.fit_resources, self.shape, self.balanced_resources]

    def is_valid(self) -> bool:
        return all([p.is_valid() for p in self.parts()])  # every part, so each shows its errors

    def top_level(self) -> dict[str, Any]:
        d = self.form.cleaned_data
        return {"percentageOfNodesToScore": d["global_percentage_of_nodes_to_score"],
                "podInitialBackoffSeconds": d["pod_initial_backoff_seconds"],
                "podMaxBackoffSeconds": d["pod_max_backoff_seconds"]}

    def profile(self) -> dict[str, Any] | None:
        """The edited profile as a v1 KubeSchedulerProfile (None: remove it)."""
        d = self.form.cleaned_data
        if d["delete"]:
            return None
        rows = [r.cleaned_data | {"name": r.plugin_name} for r in self.plugins.forms]
        shell = ProfileConfig(
            scheduler_name=d["scheduler_name"],
            filters=[r["name"] for r in rows if r.get("filter")],
            post_filters=[r["name"] for r in rows if r.get("post_filter")],
            scores=[(r["name"], r.get("weight") or 0)
                    for r in sorted((r for r in rows if r.get("score")), key=lambda r: _rank(r.get("score_rank")))],
            queue_sort=tuple(r["name"] for r in rows if r.get("queue_sort")),
            binders=tuple(r["name"] for r in rows if r.get("bind")),
        )
        out: dict[str, Any] = {"schedulerName": d["scheduler_name"]}
        if d["percentage_of_nodes_to_score"] is not None:
            out["percentageOfNodesToScore"] = d["percentage_of_nodes_to_score"]
        plugins = plugins_to_v1(shell)
        if plugins is not None:
            out["plugins"] = plugins
        plugin_config = self._plugin_config()
        if plugin_config:
            out["pluginConfig"] = plugin_config
        return out

    def locate(self, path: str, index: int) -> str:
        """Which part of this page a problem's field path points at ("" when it is not this page's)."""
        m = re.match(r"profiles\[(\d+)\]\.?(.*)", path)
        if not m:
            return "whole configuration" if path else ""
        if int(m.group(1)) != index:
            return f"another profile (profiles[{m.group(1)}])"
        rest = m.group(2)
        if rest.startswith("plugins"):
            return "plugins table"
        arg = re.match(r"pluginConfig\[(\d+)\]", rest)
        if arg:
            names = [c["name"] for c in self._plugin_config()]
            j = int(arg.group(1))
            return f"{names[j]} args" if j < len(names) else "plugin args"
        return "profile"

    def _plugin_config(self) -> list[dict]:
        d = self.form.cleaned_data
        strategy: dict[str, Any] = {"type": d["fit_type"], "resources": _resources(self.fit_resources)}
        points = [{"utilization": f.cleaned_data.get("utilization"), "score": f.cleaned_data.get("score")}
                  for f in self.shape.forms if _kept(f) and any(v is not None for v in f.cleaned_data.values()
                                                                if not isinstance(v, bool))]
        if d["fit_type"] == REQUESTED_TO_CAPACITY_RATIO or points:
            # Shape rows with another type go to validation too, which forbids them (as upstream).
            strategy["requestedToCapacityRatio"] = {"shape": points}
        fit: dict[str, Any] = {"scoringStrategy": strategy}
        for key, field in (("ignoredResources", "ignored_resources"), ("ignoredResourceGroups", "ignored_resource_groups")):
            items = [s.strip() for s in d[field].split(",") if s.strip()]
            if items:
                fit[key] = items
        affinity: dict[str, Any] = {}
        if d["added_affinity"] is not None:
            affinity["addedAffinity"] = d["added_affinity"]
        balanced = {"resources": _resources(self.balanced_resources)}
        spread: dict[str, Any] = {"defaultingType": d["spread_defaulting_type"]}
        if d["spread_default_constraints"] is not None:
            spread = {"defaultConstraints": d["spread_default_constraints"], **spread}
        inter: dict[str, Any] = {"hardPodAffinityWeight": d["hard_pod_affinity_weight"]
                                 if d["hard_pod_affinity_weight"] is not None else 1,
                                 "ignorePreferredTermsOfExistingPods": bool(d["ignore_preferred_terms_of_existing_pods"])}
        preemption: dict[str, Any] = {
            "minCandidateNodesPercentage": d["min_candidate_nodes_percentage"]
            if d["min_candidate_nodes_percentage"] is not None else DEFAULT_ARGS["DefaultPreemption"]["minCandidateNodesPercentage"],
            "minCandidateNodesAbsolute": d["min_candidate_nodes_absolute"]
            if d["min_candidate_nodes_absolute"] is not None else DEFAULT_ARGS["DefaultPreemption"]["minCandidateNodesAbsolute"]}
        out = []
        # Sorted by name, as an export writes them, so problem paths (pluginConfig[i]) match an export.
        for name, args in (("DefaultPreemption", preemption), ("InterPodAffinity", inter), ("NodeAffinity", affinity),
                           ("NodeResourcesBalancedAllocation", balanced), ("NodeResourcesFit", fit),
                           ("PodTopologySpread", spread)):
            v1 = {"apiVersion": API_VERSION, "kind": f"{name}Args", **args}
            if v1 != DEFAULT_ARGS[name]:  # upstream's defaults are not written out (an export has none either)
                out.append({"name": name, "args": v1})
        return out


def _rank(value: int | None) -> int:
    return (1 << 31) if value is None else value


def _kept(form) -> bool:
    return not form.cleaned_data.get("DELETE")


def _resources(formset) -> list[dict]:
    out = []
    for f in formset.forms:
        if not _kept(f) or not f.cleaned_data.get("name"):
            continue
        item: dict[str, Any] = {"name": f.cleaned_data["name"]}
        if f.cleaned_data.get("weight") is not None:
            item["weight"] = f.cleaned_data["weight"]
        out.append(item)
    return out


def _plugin_rows(profile: ProfileConfig | None) -> list[dict]:
    """Rows in the profile's filter order, then the remaining plugins in upstream's default order."""
    if profile is None:
        filters, weights, queue_sort, binders, post_filters = [], {}, QUEUE_SORT_PLUGINS, BIND_PLUGINS, []
    else:
        filters, weights = profile.filters, dict(profile.scores)
        queue_sort, binders, post_filters = profile.queue_sort, profile.binders, profile.post_filters
    order = list(dict.fromkeys([*filters, *(n for n, _ in (profile.scores if profile else [])), *FORM_PLUGINS]))
    ranks = {n: i for i, n in enumerate(weights)}
    return [{"name": n, "score_rank": ranks.get(n), "queue_sort": n in queue_sort, "filter": n in filters,
             "post_filter": n in post_filters, "score": n in weights,
             "weight": weights.get(n, DEFAULT_WEIGHTS.get(n) or 1), "bind": n in binders} for n in order]


def _initial(config: SchedulerConfig, profile: ProfileConfig | None, based_on: int) -> dict:
    form: dict[str, Any] = {
        "based_on": based_on,
        "global_percentage_of_nodes_to_score": config.percentage_of_nodes_to_score,
        "pod_initial_backoff_seconds": config.pod_initial_backoff_seconds,
        "pod_max_backoff_seconds": config.pod_max_backoff_seconds,
    }
    if profile is None:  # a new profile starts as kube-scheduler's default one
        profile = default_profile("")
    fit: NodeResourcesFitArgs = profile.args_for("NodeResourcesFit")
    balanced: NodeResourcesBalancedAllocationArgs = profile.args_for("NodeResourcesBalancedAllocation")
    affinity: NodeAffinityArgs = profile.args_for("NodeAffinity")
    added = args_to_v1("NodeAffinity", affinity).get("addedAffinity")
    spread = args_to_v1("PodTopologySpread", profile.args_for("PodTopologySpread"))
    inter: InterPodAffinityArgs = profile.args_for("InterPodAffinity")
    preemption: DefaultPreemptionArgs = profile.args_for("DefaultPreemption")
    form.update({
        "min_candidate_nodes_percentage": preemption.min_candidate_nodes_percentage,
        "min_candidate_nodes_absolute": preemption.min_candidate_nodes_absolute,
        "spread_defaulting_type": spread["defaultingType"],
        "spread_default_constraints": yaml.safe_dump(spread["defaultConstraints"], sort_keys=False)
        if spread.get("defaultConstraints") else "",
        "hard_pod_affinity_weight": inter.hard_pod_affinity_weight,
        "ignore_preferred_terms_of_existing_pods": inter.ignore_preferred_terms_of_existing_pods,
        "scheduler_name": profile.scheduler_name,
        "percentage_of_nodes_to_score": profile.percentage_of_nodes_to_score,
        "fit_type": fit.scoring_strategy.type,
        "ignored_resources": ", ".join(fit.ignored_resources),
        "ignored_resource_groups": ", ".join(fit.ignored_resource_groups),
        "added_affinity": yaml.safe_dump(added, sort_keys=False) if added else "",
    })
    return {
        "form": form,
        "plugins": _plugin_rows(profile),
        "fit": [{"name": r.name, "weight": r.weight} for r in fit.scoring_strategy.resources],
        "shape": [{"utilization": p.utilization, "score": p.score} for p in fit.scoring_strategy.shape],
        "balanced": [{"name": r.name, "weight": r.weight} for r in balanced.resources],
    }
