"""Settings from the environment are parsed strictly: a bad value names the variable."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_feature_gates, env_hosts, env_int, env_str

CASES = [
    (env_bool, "X_FLAG", "yes", {"default": False}, True),
    (env_bool, "X_FLAG", "0", {"default": True}, False),
    (env_bool, "X_FLAG", None, {"default": True}, True),
    (env_int, "X_NUM", "42", {"default": 1}, 42),
    (env_int, "X_NUM", None, {"default": 7}, 7),
    (env_str, "X_STR", "abc", {"default": "d"}, "abc"),
    (env_str, "X_STR", None, {"default": "d"}, "d"),
    (env_int, "X_PORT", "9464", {"default": 0, "minimum": 0, "maximum": 65535}, 9464),
    (env_hosts, "X_HOSTS", " a.example, .b.example ,", {"default": "", "debug": False}, ["a.example", ".b.example"]),
    (env_hosts, "X_HOSTS", "*", {"default": "", "debug": True}, ["*"]),
]


@pytest.mark.parametrize("parse,name,value,kwargs,want", CASES)
def test_it_reads_good_values(monkeypatch, parse, name, value, kwargs, want):
    if value is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, value)
    assert parse(name, **kwargs) == want


BAD = [
    (env_bool, "X_FLAG", "maybe", {"default": False}, "X_FLAG: expected true or false, got 'maybe'"),
    (env_int, "X_NUM", "ten", {"default": 1}, "X_NUM: expected an integer, got 'ten'"),
    (env_int, "X_NUM", "0", {"default": 1, "minimum": 1}, "X_NUM: must be at least 1, got 0"),
    (env_str, "X_SECRET", None, {"default": None}, "X_SECRET: required, but not set in the environment"),
    (env_int, "X_PORT", "65536", {"default": 0, "maximum": 65535}, "X_PORT: must be at most 65535, got 65536"),
    (env_hosts, "X_HOSTS", "a.example,*", {"default": "", "debug": False},
     "X_HOSTS: '*' accepts any Host header and any site's websocket; list the names the dashboard is reached by "
     "(e.g. schedboard.example.com, .example.com for its subdomains)"),
    (env_hosts, "X_HOSTS", "*.example.com", {"default": "", "debug": True},
     "X_HOSTS: '*.example.com' matches nothing; write '.example.com' for the domain and its subdomains"),
    (env_hosts, "X_HOSTS", "exa*mple.com", {"default": "", "debug": False},
     "X_HOSTS: 'exa*mple.com' matches nothing; '*' stands alone or not at all"),
]


@pytest.mark.parametrize("parse,name,value,kwargs,message", BAD)
def test_it_stops_on_a_bad_value_naming_the_variable(monkeypatch, parse, name, value, kwargs, message):
    if value is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured) as exc:
        parse(name, **kwargs)
    assert str(exc.value) == message


def test_a_choice_outside_the_list_names_the_variable_and_the_choices(monkeypatch):
    from config.env import env_choice

    monkeypatch.setenv("SCHEDBOARD_TRACE", "some")
    with pytest.raises(ImproperlyConfigured, match=r"SCHEDBOARD_TRACE: expected one of failures, all, off, got 'some'"):
        env_choice("SCHEDBOARD_TRACE", "failures", ("failures", "all", "off"))
    monkeypatch.setenv("SCHEDBOARD_TRACE", "all")
    assert env_choice("SCHEDBOARD_TRACE", "failures", ("failures", "all", "off")) == "all"
    monkeypatch.delenv("SCHEDBOARD_TRACE")
    assert env_choice("SCHEDBOARD_TRACE", "failures", ("failures", "all", "off")) == "failures"


RETENTION = [
    ("7d", 7 * 86400.0), ("1h", 3600.0), ("1h30m", 5400.0), ("90m", 5400.0), ("36h", 129600.0), ("2.5d", 216000.0),
    ("600", 600.0), (" 10m ", 600.0), ("forever", None), ("Forever", None), ("0", None), ("0s", None), (None, 1.0),
]


@pytest.mark.parametrize("value,seconds", RETENTION)
def test_a_retention_is_a_duration_with_days_or_forever(monkeypatch, value, seconds):
    from config.env import env_retention

    if value is None:
        monkeypatch.delenv("X_KEEP", raising=False)
    else:
        monkeypatch.setenv("X_KEEP", value)
    assert env_retention("X_KEEP", 1.0) == seconds


@pytest.mark.parametrize("value,kwargs,message", [
    ("a week", {}, "X_KEEP: expected a duration such as 7d, 1h or forever, got 'a week'"),
    ("7 d", {}, "X_KEEP: expected a duration such as 7d, 1h or forever, got '7 d'"),
    ("1w", {}, "X_KEEP: expected a duration such as 7d, 1h or forever, got '1w'"),
    ("nan", {}, "X_KEEP: expected a duration such as 7d, 1h or forever, got 'nan'"),
    ("inf", {}, "X_KEEP: expected a duration such as 7d, 1h or forever, got 'inf'"),
    ("-1h", {}, "X_KEEP: expected a duration such as 7d, 1h or forever, got '-1h'"),
    ("-5", {}, "X_KEEP: must not be negative, got '-5'"),
    ("5m", {"minimum": 361.0}, "X_KEEP: must be at least 6m1s (or forever), got '5m'"),
    ("1m", {"minimum": 3600.0}, "X_KEEP: must be at least 1h (or forever), got '1m'"),
])
def test_a_bad_retention_names_the_variable(monkeypatch, value, kwargs, message):
    from config.env import env_retention

    monkeypatch.setenv("X_KEEP", value)
    with pytest.raises(ImproperlyConfigured) as exc:
        env_retention("X_KEEP", 1.0, **kwargs)
    assert str(exc.value) == message


def test_a_duration_that_is_not_a_number_is_refused_not_read_as_nan(monkeypatch):
    from config.env import env_duration

    monkeypatch.setenv("X_WAIT", "nan")
    with pytest.raises(ImproperlyConfigured, match=r"^X_WAIT: expected a duration such as 15s or 500ms, got 'nan'$"):
        env_duration("X_WAIT", 1.0)


def test_feature_gates_read_as_kube_schedulers_flag_over_their_defaults(monkeypatch):
    known = {"OpportunisticBatching": True, "Other": False}
    monkeypatch.delenv("X_GATES", raising=False)
    assert env_feature_gates("X_GATES", known) == known
    monkeypatch.setenv("X_GATES", "OpportunisticBatching=false, Other=true")
    assert env_feature_gates("X_GATES", known) == {"OpportunisticBatching": False, "Other": True}


@pytest.mark.parametrize("value, message", [
    ("Nope=true", "X_GATES: unrecognized feature gate: Nope (known: OpportunisticBatching)"),
    ("OpportunisticBatching", "X_GATES: missing bool value for OpportunisticBatching"),
    ("OpportunisticBatching=maybe", "X_GATES: invalid value of OpportunisticBatching='maybe': expected true or false"),
])
def test_a_bad_feature_gate_stops_start_up_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv("X_GATES", value)
    with pytest.raises(ImproperlyConfigured, match=re.escape(message)):
        env_feature_gates("X_GATES", {"OpportunisticBatching": True})
