"""The database refuses a configuration version that kube-scheduler's validation refuses, even when
the row is written past the service (a raw insert): the constraints reject what the form would."""

import pytest
from django.db import IntegrityError, transaction

from scheduler.engine.config import ConfigError, ProfileConfig, SchedulerConfig, config_to_dict, default_profile
from scheduler.engine.plugin_args import (REQUESTED_TO_CAPACITY_RATIO, NodeResourcesBalancedAllocationArgs,
                                          NodeResourcesFitArgs, ResourceSpec, ScoringStrategy, UtilizationShapePoint)
from scheduler.models import SchedulerConfigVersion
from scheduler.versions.services import config_version_create

pytestmark = pytest.mark.django_db(transaction=True)


def profile(name="default-scheduler", **changes) -> ProfileConfig:
    return ProfileConfig(**{**default_profile(name).__dict__, **changes})


def fit(**strategy) -> dict:
    return {"NodeResourcesFit": NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(**strategy))}


def shape(*points) -> dict:
    return fit(type=REQUESTED_TO_CAPACITY_RATIO, shape=tuple(UtilizationShapePoint(u, s) for u, s in points))


# (configuration, the problem upstream reports, the constraint that refuses the raw row)
BAD = [
    (SchedulerConfig([profile()], percentage_of_nodes_to_score=101),
     ("percentageOfNodesToScore", "Invalid value: 101: not in valid range [0-100]"), "config_version_percentage_in_range"),
    (SchedulerConfig([profile(percentage_of_nodes_to_score=-1)]),
     ("profiles[0].percentageOfNodesToScore", "Invalid value: -1: not in valid range [0-100]"),
     "config_version_profile_percentage_in_range"),
    (SchedulerConfig([profile()], pod_initial_backoff_seconds=0),
     ("podInitialBackoffSeconds", "Invalid value: 0: must be greater than 0"), "config_version_initial_backoff_positive"),
    (SchedulerConfig([profile()], pod_initial_backoff_seconds=5, pod_max_backoff_seconds=4),
     ("podMaxBackoffSeconds", "Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds"),
     "config_version_max_backoff_not_below_initial"),
    (SchedulerConfig([profile(), profile()]),
     ("profiles[1].schedulerName", "Duplicate value: profiles[0].schedulerName"), "config_version_profile_names_unique"),
    (SchedulerConfig([profile(plugin_args=fit(resources=(ResourceSpec("cpu", 101),)))]),
     ("profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
      "Invalid value: 101: resource weight of cpu not in valid range (0, 100]"), "config_version_fit_resource_weight_in_range"),
    (SchedulerConfig([profile(plugin_args=fit(resources=(ResourceSpec("memory", -3),)))]),
     ("profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
      "Invalid value: -3: resource weight of memory not in valid range (0, 100]"), "config_version_fit_resource_weight_in_range"),
    (SchedulerConfig([profile(plugin_args=shape((0, 0), (101, 10)))]),
     ("profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
      "Invalid value: 101: not in valid range [0, 100]"), "config_version_shape_in_range"),
    (SchedulerConfig([profile(plugin_args=shape((0, 0), (100, 11)))]),
     ("profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].score",
      "Invalid value: 11: not in valid range [0, 10]"), "config_version_shape_in_range"),
    (SchedulerConfig([profile(plugin_args=shape((50, 1), (50, 2)))]),
     ("profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
      "Invalid value: 50: values must be sorted in increasing order"), "config_version_shape_increasing"),
    (SchedulerConfig([profile(plugin_args={"NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs(
        resources=(ResourceSpec("cpu", 2),))})]),
     ("profiles[0].pluginConfig[0].args.resources[0].weight", "Invalid value: 2: must be 1"),
     "config_version_balanced_weight_one"),
    (SchedulerConfig([profile("a", queue_sort=())]),
     ("profiles[0].plugins.queueSort", 'only one queue sort plugin required for profile with scheduler name "a", but got 0'),
     "config_version_queue_sort_and_binder"),
    (SchedulerConfig([profile("b", binders=())]),
     ("profiles[0].plugins.bind", 'at least one bind plugin is needed for profile with scheduler name "b"'),
     "config_version_queue_sort_and_binder"),
]


@pytest.mark.parametrize("config, problem, constraint", BAD, ids=[c for _, _, c in BAD])
def test_the_database_refuses_what_validation_refuses(config, problem, constraint):
    with pytest.raises(ConfigError) as exc:
        config_version_create(config=config, reason="through the service")
    assert problem in exc.value.problems
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        SchedulerConfigVersion.objects.create(number=1, config=config_to_dict(config), reason="past the service")
    assert not SchedulerConfigVersion.objects.exists()


@pytest.mark.parametrize("mutate, constraint", [
    (lambda d: d["profiles"][0]["scores"][0].__setitem__(1, 0), "config_version_score_weight_set"),
    (lambda d: d.__setitem__("profiles", []), "config_version_has_a_profile"),
    (lambda d: d["profiles"][0].__setitem__("scheduler_name", ""), "config_version_profile_names_unique"),
    (lambda d: d.pop("pod_max_backoff_seconds"), "config_version_has_fields"),
], ids=["score-weight-zero", "no-profile", "empty-name", "missing-field"])
def test_rows_the_model_cannot_even_express_are_refused(mutate, constraint):
    data = config_to_dict(SchedulerConfig([profile()]))
    mutate(data)
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        SchedulerConfigVersion.objects.create(number=1, config=data, reason="past the service")


def test_a_valid_configuration_passes_every_constraint():
    config = SchedulerConfig([profile(plugin_args=shape((0, 0), (50, 5), (100, 10))), profile("batch", queue_sort=("PrioritySort",))],
                             percentage_of_nodes_to_score=0, pod_initial_backoff_seconds=3, pod_max_backoff_seconds=3)
    assert config_version_create(config=config, reason="every edge value").number == 1
