"""The scheduler configuration workers run: the active SchedulerConfigVersion row, else version 0,
the initial configuration (SCHEDBOARD_CONFIG, a KubeSchedulerConfiguration file, or kube-scheduler's default).

`active_version_number()` is the cheap per-batch check (one indexed row); a worker loads the
configuration itself only when that number changes. Saved versions never change, so a number
names one configuration for good.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.db import connection

from ..engine.config import SchedulerConfig, config_from_dict, default_config, load_config
from ..models import SchedulerConfigVersion

INITIAL_VERSION = 0


@cache
def initial_config() -> SchedulerConfig:
    """Version 0: what runs before any version is saved."""
    path = settings.SCHEDBOARD_CONFIG
    if not path:
        return default_config()
    with open(path) as f:
        return load_config(f.read(), path)


_ACTIVE_NUMBER_SQL = f"SELECT number FROM {SchedulerConfigVersion._meta.db_table} WHERE active"


def active_version_number() -> int:
    """The number of the active version (0 when none is saved).

    Plain SQL on the partial unique index: every batch of every worker asks, and the ORM's
    query building costs ten times the round trip here.
    """
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_NUMBER_SQL)
        row = cursor.fetchone()
    return INITIAL_VERSION if row is None else row[0]


def config_for_version(number: int) -> SchedulerConfig:
    if number == INITIAL_VERSION:
        return initial_config()
    return config_from_dict(SchedulerConfigVersion.objects.values_list("config", flat=True).get(number=number))


def active_config() -> tuple[int, SchedulerConfig]:
    """(number, configuration) of the active version, read together."""
    row = SchedulerConfigVersion.objects.filter(active=True).values_list("number", "config").first()
    if row is None:
        return INITIAL_VERSION, initial_config()
    return row[0], config_from_dict(row[1])


def scheduler_config() -> SchedulerConfig:
    """The configuration in force now."""
    return active_config()[1]


_ACTIVE_SCHEDULER_NAMES_SQL = (f"SELECT array(SELECT p->>'scheduler_name' FROM jsonb_array_elements(config->'profiles') p) "
                               f"FROM {SchedulerConfigVersion._meta.db_table} WHERE active")


def scheduler_names() -> set[str]:
    """The spec.schedulerName values we schedule: the active configuration's profiles (as kube-scheduler).

    The kube mirror asks once per watch batch: on Postgres one plain statement reads the names out of the
    active row (164 us measured, most of it the round trip), where the ORM's query and the whole
    configuration's parse took 367 us."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_ACTIVE_SCHEDULER_NAMES_SQL)
            row = cursor.fetchone()
        if row is None:
            return {p.scheduler_name for p in initial_config().profiles}
        if all(isinstance(name, str) for name in row[0]):
            return set(row[0])
    return {p.scheduler_name for p in active_config()[1].profiles}


_PROFILE_NAMES_SQL = (f"SELECT DISTINCT p->>'scheduler_name' FROM {SchedulerConfigVersion._meta.db_table}, "
                      "jsonb_array_elements(config->'profiles') AS p")


def profile_names() -> set[str]:
    """Every profile (schedulerName) of any saved version or of version 0.

    Read from the versions (a few rows, one per save), never from the attempts: every attempt ran
    with one of its version's profiles, so these are all the profiles attempts can have.
    """
    names = {p.scheduler_name for p in initial_config().profiles}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_PROFILE_NAMES_SQL)
            names.update(name for (name,) in cursor.fetchall() if name is not None)
    else:
        for config in SchedulerConfigVersion.objects.values_list("config", flat=True).iterator():
            names.update(p["scheduler_name"] for p in config.get("profiles", []))
    return names
