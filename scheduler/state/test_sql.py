"""The set-based writes (sql.py) against real Postgres: rows in, the same rows out, with the values prepared
as Django prepares them (the fast path hands the driver exactly what get_db_prep_save would)."""

import datetime
import json

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from scheduler.models import Attempt, Binding, Pod
from scheduler.state.sql import (JSONText, array_param, _copy_prep, _prep, in_list, insert_many, new_row, select_models,
                                 update_from_values)

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLES = [None, 0, 7, -3, 2**40, np.int64(5), 1.5, 2.0, "", "text", True, False,
           timezone.now(), datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)]


def _same(got, expected) -> bool:
    # Django wraps an int in psycopg's Int4 / Int8 to name the parameter's type; the arrays and COPY
    # rows the fast path builds are typed by the statement, so the plain int is the same value.
    if isinstance(expected, int) and not isinstance(expected, bool) and type(expected) is not int:
        return isinstance(got, int) and not isinstance(got, bool) and int(got) == int(expected)
    return type(got) is type(expected) and got == expected


@pytest.mark.parametrize("model", [Attempt, Pod, Binding])
def test_values_are_prepared_as_django_prepares_them(model):
    for field in model._meta.concrete_fields:
        if field.get_internal_type() == "JSONField":
            continue  # Django wraps JSON for the driver; the COPY path is checked below
        for value in SAMPLES:
            try:
                expected = field.get_db_prep_save(value, connection)
            except (TypeError, ValueError, ValidationError):
                continue  # a value this field refuses either way
            assert _same(_prep(field)(value), expected), (model.__name__, field.name, value)


def _pod(name: str) -> Pod:
    return Pod.objects.create(namespace="default", name=name, uid=name, manifest={"spec": {}}, created_at=timezone.now())


def test_insert_many_writes_every_column_and_sets_the_keys():
    pod = _pod("p")
    now = timezone.now()
    attempts = [Attempt(pod=pod, namespace="default", pod_name="p", pod_uid="p", number=i, started_at=now,
                        result="scheduled", node_name=f"n{i}", message="it's \"quoted\"\ttab\nline",
                        candidates=[{"node": f"n{i}", "total": i, "plugins": {"A": {"raw": i}}}],
                        reasons={"x": i} if i else {}, attempt_ms=0.25 * i, e2e_ms=None)
                for i in range(3)]
    attempts[2].trace = {"v": 2}
    insert_many(Attempt, attempts)
    assert all(a.pk for a in attempts)
    for a in attempts:
        stored = Attempt.objects.get(pk=a.pk)
        for field in ("pod_id", "namespace", "number", "started_at", "result", "node_name", "message", "candidates",
                      "reasons", "attempt_ms", "e2e_ms"):
            assert getattr(stored, field) == getattr(a, field), field
    assert Attempt.objects.get(pk=attempts[0].pk).trace == {}
    assert Attempt.objects.get(pk=attempts[2].pk).trace == {"v": 2}
    insert_many(Binding, [Binding(pod=pod, namespace="default", pod_name="p", pod_uid="p", node_name="n0",
                                  attempt_id=attempts[0].pk, bound_at=now)])
    assert Binding.objects.get().attempt_id == attempts[0].pk


def test_update_from_values_updates_the_rows_named_where_the_condition_holds():
    a, b, c = _pod("a"), _pod("b"), _pod("c")
    Pod.objects.filter(pk=c.pk).update(node_name="bound")
    now = timezone.now()
    updated = update_from_values(Pod, ["scheduled_status", "scheduled_message", "scheduled_transition_at", "attempts"],
                                 [(a.pk, "False", "no room", now, 2), (b.pk, "False", "", None, np.int64(3)),
                                  (c.pk, "False", "x", now, 9)],
                                 where="scheduler_pod.node_name = ''", returning=True)
    assert sorted(updated) == sorted([a.pk, b.pk])
    rows = {p.pk: p for p in Pod.objects.all()}
    assert (rows[a.pk].scheduled_message, rows[a.pk].scheduled_transition_at, rows[a.pk].attempts) == ("no room", now, 2)
    assert (rows[b.pk].scheduled_transition_at, rows[b.pk].attempts) == (None, 3)
    assert rows[c.pk].attempts == 0
    # A column NULL in every row still has its type.
    update_from_values(Pod, ["binding_at"], [(a.pk, None), (b.pk, None)])


def test_a_json_value_goes_into_copy_as_its_text():
    field = Attempt._meta.get_field("candidates")
    assert _copy_prep(field)([{"node": "n", "total": 1}]) == '[{"node": "n", "total": 1}]'
    assert _copy_prep(field)(None) is None


def test_update_from_values_writes_json_values_as_their_text_and_reads_them_back():
    a, b = _pod("a"), _pod("b")
    manifests = [{"spec": {"note": 'it\'s "quoted" \\ {a,b}', "n": [1, None, 2.5]}}, {"ünï": {}}]
    update_from_values(Pod, ["manifest", "req_scalar"], [(a.pk, manifests[0], JSONText('{"x/y":2}')),
                                                         (b.pk, manifests[1], {})])
    rows = {p.pk: p for p in Pod.objects.all()}
    assert (rows[a.pk].manifest, rows[a.pk].req_scalar) == (manifests[0], {"x/y": 2})
    assert (rows[b.pk].manifest, rows[b.pk].req_scalar) == (manifests[1], {})


def test_new_row_is_the_instance_the_model_makes():
    pod = _pod("p")
    now = timezone.now()
    values = dict(namespace="default", pod_name="p", pod_uid="p", number=2, started_at=now, result="scheduled")
    made, fast = Attempt(pod=pod, **values), new_row(Attempt, pod_id=pod.pk, **values)
    assert type(fast) is Attempt and fast._state.adding and fast._state.db is None
    assert {k: v for k, v in fast.__dict__.items() if k != "_state"} == {k: v for k, v in made.__dict__.items() if k != "_state"}
    assert fast.candidates is not new_row(Attempt).candidates  # a default of its own, as each instance has


def test_insert_many_writes_json_text_as_it_is():
    pod = _pod("p")
    attempt = new_row(Attempt, pod_id=pod.pk, namespace="default", pod_name="p", number=1, started_at=timezone.now(),
                      result="scheduled", candidates=JSONText('[{"node":"n0","plugins":{},"total":3}]'))
    insert_many(Attempt, [attempt])
    assert Attempt.objects.get(pk=attempt.pk).candidates == [{"node": "n0", "plugins": {}, "total": 3}]


def test_array_param_reads_back_as_the_values_it_was_given():
    from django.db import connection

    now = timezone.now()
    columns = {
        "bigint": [1, None, -(2 ** 62), 0],
        "text": ['it\'s "quoted"', "back\\slash", "", None, "NULL", "{a,b}", "tab\tline\n", "ünï"],
        "timestamptz": [now, None, now.replace(microsecond=0)],
        "double precision": [0.25, None, 1e300, -3.0],
        "boolean": [True, False, None],
    }
    with connection.cursor() as cursor:
        for kind, values in columns.items():
            param = array_param(values)
            assert isinstance(param, str), kind
            cursor.execute(f"SELECT unnest(%s::{kind}[])", [param])
            assert [r[0] for r in cursor.fetchall()] == values, kind
    assert array_param([1, np.int64(2)]) == [1, np.int64(2)]  # not one of ours: psycopg's way
    assert array_param([now.replace(tzinfo=None)]) == [now.replace(tzinfo=None)]
    assert array_param([float("nan")])[0] != array_param([float("nan")])[0]


# Quotes, backslashes, unicode (beyond the BMP too), control characters, nesting, the array text's own syntax.
AWKWARD_JSON = [
    {"say": 'it\'s "quoted"', "path": "C:\\dir\\", "nested": [[1, [2, ["three", None]]], {"k": [True, False]}]},
    ["{a,b}", "NULL", "", "tab\tline\nend", "ünïcødé ☃ 😀", {"\"key\"": "\\\"", "\\": ["]["]}],
    {"deep": {"er": {"est": [[[[]]], {}]}}, "number": -1.5e-300, "big": 2 ** 62},
    "a JSON string \\ \" with its own quotes",
    [], {}, 0, True,
]


def test_a_json_value_is_prepared_as_the_text_django_has_the_driver_write():
    for field in (Attempt._meta.get_field("candidates"), Pod._meta.get_field("manifest")):
        for value in AWKWARD_JSON:
            expected = field.get_db_prep_save(value, connection)  # psycopg's Jsonb on Postgres, the text elsewhere
            if hasattr(expected, "obj"):
                expected = (expected.dumps or json.dumps)(expected.obj)
            assert _prep(field)(value) == expected
        assert _prep(field)(None) is None  # SQL NULL, as Django stores None
        assert _prep(field)(JSONText('{"a": 1}')) == '{"a": 1}'
        # So a batch's column of them is an array's text, not a list for the driver's dumper.
        assert isinstance(array_param([_prep(field)(v) for v in AWKWARD_JSON]), str)


def test_awkward_json_round_trips_through_update_from_values_and_insert_many():
    pods = [_pod(f"p{i}") for i in range(len(AWKWARD_JSON))]
    manifests = [{"spec": {}, "value": value} for value in AWKWARD_JSON]
    update_from_values(Pod, ["manifest", "req_scalar"], [(p.pk, m, v) for p, m, v in zip(pods, manifests, AWKWARD_JSON)])
    rows = {p.pk: p for p in Pod.objects.all()}
    assert [rows[p.pk].manifest for p in pods] == manifests
    assert [rows[p.pk].req_scalar for p in pods] == AWKWARD_JSON
    now = timezone.now()
    attempts = [new_row(Attempt, pod_id=pods[0].pk, namespace="default", pod_name="p0", number=i, started_at=now,
                        result="scheduled", candidates=value, trace=AWKWARD_JSON[0])
                for i, value in enumerate(AWKWARD_JSON)]
    attempts.append(new_row(Attempt, pod_id=pods[0].pk, namespace="default", pod_name="p0", number=99, started_at=now,
                            result="scheduled", candidates=JSONText(json.dumps(AWKWARD_JSON))))
    insert_many(Attempt, attempts)
    stored = {a.pk: a for a in Attempt.objects.all()}
    assert [stored[a.pk].candidates for a in attempts] == [*AWKWARD_JSON, AWKWARD_JSON]
    update_from_values(Attempt, ["candidates", "reasons"], [(a.pk, list(reversed(AWKWARD_JSON)), {"r": AWKWARD_JSON[1]})
                                                             for a in attempts[:1]])
    again = Attempt.objects.get(pk=attempts[0].pk)
    assert again.candidates == list(reversed(AWKWARD_JSON)) and again.reasons == {"r": AWKWARD_JSON[1]}


@pytest.mark.parametrize("model", [Attempt, Pod])
def test_select_models_gives_the_instances_the_orm_gives(model):
    pod = _pod("p")
    pod.nominated_node, pod.bound_at, pod.manifest = "n1", timezone.now(), {"spec": {"x": [1, "two", None]}}
    pod.save()
    _pod("q")
    Attempt.objects.create(pod=pod, namespace="default", pod_name="p", pod_uid="p", number=1, started_at=timezone.now(),
                           result="unschedulable", reasons={"a": 1}, trace={"t": [1.5]}, e2e_ms=None)
    expected = list(model.objects.order_by("id"))
    got = select_models(model, "TRUE ORDER BY id")
    assert [type(o) for o in got] == [model] * len(expected) and len(got) == len(expected) > 0
    for a, b in zip(got, expected):
        assert not a._state.adding and a._state.db == b._state.db
        for field in model._meta.concrete_fields:
            x, y = getattr(a, field.attname), getattr(b, field.attname)
            assert type(x) is type(y) and x == y, field.name
    assert select_models(model, "id = %s", [-1]) == []


def test_in_list_selects_the_rows_whose_column_is_one_of_the_values():
    _pod("a"), _pod("b"), _pod("c")
    where, params = in_list("name", ["a", "c", "zz"])
    assert sorted(p.name for p in select_models(Pod, where, params)) == ["a", "c"]
    where, params = in_list("name", [])
    assert select_models(Pod, where, params) == []
