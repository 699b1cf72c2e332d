"""Versioned scheduler configuration: save a new version, restore an old one, read the active one.

Every save goes through kube-scheduler's validation (engine/config.load_config) and becomes a
new immutable, active SchedulerConfigVersion; workers pick it up at their next batch.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

import yaml
from django.db import connection, transaction
from django.db.models import Max

from ..engine.config import (ConfigError, SchedulerConfig, config_from_dict, config_to_dict, default_profile, dump_config,
                            load_config)
from ..models import SchedulerConfigVersion
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


def config_with_draft_weights(config: SchedulerConfig, profile_name: str, weights: dict[str, int | None], *,
                              filename: str = "<draft weights>") -> dict[str, int]:
    """Draft score weights for one profile, checked as kube-scheduler checks a file's: plugin -> weight.

    The weights replace the profile's score plugins in `config` (a profile it lacks starts from the
    default one), and the whole configuration goes through config_validate: int32 decoding, an unset
    or 0 weight is 1, and the total must not overflow, with upstream's wording and field paths.
    Raises ConfigError and computes nothing on any problem.
    """
    draft = [(name, weight or 0) for name, weight in weights.items()]  # 0: as unset, the loader makes it 1
    profiles = list(config.profiles)
    index = next((i for i, p in enumerate(profiles) if p.scheduler_name == profile_name), None)
    if index is None:
        profiles.append(replace(default_profile(profile_name), scores=draft))
        index = len(profiles) - 1
    else:
        profiles[index] = replace(profiles[index], scores=draft)
    checked = config_validate(replace(config, profiles=profiles, warnings=[]), filename=filename)
    return dict(checked.profiles[index].scores)


def config_version_create(*, config: SchedulerConfig, reason: str, user=None,
                          based_on: int | None = None) -> SchedulerConfigVersion:
    """Save `config` as the next version and make it the active one; nothing changes on any problem.

    `based_on`: the active version the change was made from (an edit form's); if another version
    became active meanwhile, the save is refused rather than silently undoing that change.
    """
    reason = (reason or "").strip()
    if not reason:
        raise ConfigError([("reason", "Required value: say why the configuration changes")])
    checked = config_validate(config)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Serialise savers (numbering and the active flag); readers are not blocked.
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {SchedulerConfigVersion._meta.db_table} IN SHARE ROW EXCLUSIVE MODE")
        if based_on is not None:
            active = SchedulerConfigVersion.objects.filter(active=True).values_list("number", flat=True).first() or 0
            if active != based_on:
                raise ConfigError([("", f"version {active} was saved while you edited version {based_on}; "
                                        "reload the page and make your change again")])
        number = (SchedulerConfigVersion.objects.aggregate(n=Max("number"))["n"] or 0) + 1
        SchedulerConfigVersion.objects.filter(active=True).update(active=False)
        return SchedulerConfigVersion.objects.create(number=number, config=config_to_dict(checked), reason=reason,
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


def config_version_import(*, text: str, filename: str, reason: str, user=None) -> tuple[SchedulerConfigVersion, list[str]]:
    """A KubeSchedulerConfiguration file saved as the next, active version: (version, warnings).

    The command line and the admin's import both come here; a bad file raises ConfigError naming
    every problem with its field path, and nothing is saved.
    """
    config = load_config(text, filename)
    try:
        version = config_version_create(config=config, reason=reason, user=user)
    except ConfigError as exc:
        exc.filename = filename
        raise
    return version, list(config.warnings)


def config_profile_save(*, based_on: int, scheduler_name: str | None, profile: dict[str, Any] | None,
                        top_level: dict[str, Any], reason: str, user=None) -> SchedulerConfigVersion:
    """One profile edited (or added, or removed) in version `based_on`, saved as the next version.

    `profile` is the profile as a v1 KubeSchedulerProfile (None removes `scheduler_name`'s profile;
    `scheduler_name` None adds it); `top_level` holds the v1 top-level fields to set (None: unset).
    The whole configuration is then loaded as kube-scheduler loads a file, so the edit gets
    upstream's validation, wording and field paths (profiles[i]...), the same as an import.
    """
    doc = yaml.safe_load(dump_config(config_for_version(based_on)))
    profiles = doc["profiles"]
    index = next((i for i, p in enumerate(profiles) if p["schedulerName"] == scheduler_name), None)
    if scheduler_name is not None and index is None:
        raise ConfigError([("profiles", f"no profile named {scheduler_name!r} in version {based_on}")])
    if profile is None:
        if len(profiles) == 1:
            raise ConfigError([("profiles", "Required value: the last profile cannot be removed")])
        del profiles[index]
    elif index is None:
        profiles.append(profile)
    else:
        profiles[index] = profile
    for key, value in top_level.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    # Key order as an exported file, so the text a problem quotes reads like one.
    ordered = {k: doc[k] for k in ("apiVersion", "kind", "percentageOfNodesToScore", "podInitialBackoffSeconds",
                                   "podMaxBackoffSeconds", "profiles") if k in doc}
    config = load_config(yaml.safe_dump(ordered, sort_keys=False), "<form>")
    return config_version_create(config=config, reason=reason, user=user, based_on=based_on)


def config_version_diff(version: SchedulerConfigVersion, against: int | None = None) -> str:
    """A unified diff of the exported KubeSchedulerConfiguration from version `against` to this one.

    `against`: any version number (0: the initial configuration; a later one gives the diff the
    other way round), by default the previous number. Raises SchedulerConfigVersion.DoesNotExist
    for a number never saved.
    """
    against = version.number - 1 if against is None else against
    before = dump_config(config_for_version(against))
    after = dump_config(config_from_dict(version.config))
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"version {against}", tofile=f"version {version.number}"))
