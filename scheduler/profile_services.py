"""Versioned scheduler configuration: save a new version, restore an old one, read the active one.

Every save goes through kube-scheduler's validation (engine/config.load_config) and becomes a
new immutable, active SchedulerConfigVersion; workers pick it up at their next batch.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Max

from .engine.config import ConfigError, SchedulerConfig, dump_config, load_config
from .models import SchedulerConfigVersion
from .profiles import active_config, config_for_version


def config_validate(config: SchedulerConfig, *, filename: str = "<config>") -> SchedulerConfig:
    """The configuration as kube-scheduler would run it, or ConfigError with upstream's field paths and wording.

    The one validation path: whatever built `config` (a file, a form, a restore), it is written
    out as a KubeSchedulerConfiguration and loaded back as kube-scheduler would load it.
    """
    try:
        text = dump_config(config)
    except ValueError as exc:  # a plugin at an extension point it does not implement
        raise ConfigError([("profiles", str(exc))], filename) from None
    return load_config(text, filename)


def config_version_create(*, config: SchedulerConfig, reason: str, user=None) -> SchedulerConfigVersion:
    """Save `config` as the next version and make it the active one; nothing changes on any problem."""
    reason = (reason or "").strip()
    if not reason:
        raise ConfigError([("reason", "Required value: say why the configuration changes")])
    checked = config_validate(config)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Serialise savers (numbering and the active flag); readers are not blocked.
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {SchedulerConfigVersion._meta.db_table} IN SHARE ROW EXCLUSIVE MODE")
        number = (SchedulerConfigVersion.objects.aggregate(n=Max("number"))["n"] or 0) + 1
        SchedulerConfigVersion.objects.filter(active=True).update(active=False)
        return SchedulerConfigVersion.objects.create(number=number, config=checked.to_dict(), reason=reason,
                                                     created_by=user, active=True)


def config_version_restore(*, number: int, reason: str, user=None) -> SchedulerConfigVersion:
    """Save an old version's configuration (0: the initial one) again, as a new, active version.

    Raises SchedulerConfigVersion.DoesNotExist for a number never saved.
    """
    return config_version_create(config=config_for_version(number), reason=reason, user=user)


def config_active() -> tuple[int, SchedulerConfig]:
    """(number, configuration) in force now; 0 is the initial configuration."""
    return active_config()


def config_export() -> str:
    """The active configuration as a v1 KubeSchedulerConfiguration."""
    return dump_config(config_active()[1])
