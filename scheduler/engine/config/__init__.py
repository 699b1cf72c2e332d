"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) to and from our declarative profiles, laid out
as kube-scheduler's pkg/scheduler/apis/config: types, defaults, decode (strict decoding, defaulting, merging
and multiPoint expansion), validation, v1 (the wire form: dump and export).

The public names are re-exported here so that `from scheduler.engine.config import load_config` reads the
same wherever it is used.
"""

from .decode import config_from_dict, load_config, profile_from_dict
from .defaults import DEFAULT_MULTI_POINT, UNMODELLED_PLUGINS, default_config, default_profile, merge_plugin_set
from .types import (
    API_VERSION,
    ARGS_PLUGINS,
    BIND_PLUGINS,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    EXTENSION_POINTS,
    INVALID_PLUGINS,
    KIND,
    MODELLED,
    MODELLED_POINTS,
    PRE_ENQUEUE_PLUGINS,
    QUEUE_SORT_PLUGINS,
    SCORING_STRATEGY_TYPES,
    ConfigError,
    PluginSet,
    ProfileConfig,
    SchedulerConfig,
)
from .v1 import args_to_v1, config_to_dict, dump_config, plugins_to_v1, profile_to_dict
from .validation import score_total_overflows

__all__ = [
    "API_VERSION", "ARGS_PLUGINS", "BIND_PLUGINS", "DEFAULT_MULTI_POINT", "DEFAULT_POD_INITIAL_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_BACKOFF_SECONDS", "EXTENSION_POINTS", "INVALID_PLUGINS", "KIND", "MODELLED", "MODELLED_POINTS",
    "PRE_ENQUEUE_PLUGINS", "QUEUE_SORT_PLUGINS", "SCORING_STRATEGY_TYPES", "UNMODELLED_PLUGINS", "ConfigError", "PluginSet", "ProfileConfig",
    "SchedulerConfig", "args_to_v1", "config_from_dict", "config_to_dict", "default_config", "default_profile",
    "dump_config", "load_config", "merge_plugin_set", "plugins_to_v1", "profile_from_dict", "profile_to_dict",
    "score_total_overflows",
]
