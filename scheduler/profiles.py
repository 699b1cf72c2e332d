"""The scheduler configuration this process runs with: SCHEDBOARD_CONFIG (a KubeSchedulerConfiguration
file) or kube-scheduler's default profile."""

from functools import cache

from django.conf import settings

from .engine.config import SchedulerConfig, default_config, load_config


@cache
def scheduler_config() -> SchedulerConfig:
    path = settings.SCHEDBOARD_CONFIG
    if not path:
        return default_config()
    with open(path) as f:
        return load_config(f.read(), path)
