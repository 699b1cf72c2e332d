"""Set-based writes the ORM has no cheap form for: many rows, each with its own values, in one statement.

Django's bulk_update builds a CASE per field per row and costs milliseconds per row in
Python; one UPDATE ... FROM (VALUES ...) does the same work in a single round trip.
"""

from __future__ import annotations

import datetime
import json

from django.db import connection, connections, models
from django.db.models.base import ModelState
from django.utils.functional import Promise


def rows_source(types: list[str], rows: list[tuple]) -> tuple[str, list]:
    """A row source for `WITH v(columns) AS (<source>)` and its parameters, for `rows` whose columns have
    the SQL `types`: on Postgres one unnest of one array per column (a short statement, the same for any
    number of rows: psycopg converts it once and Postgres plans it once, where a VALUES list of
    thousands of placeholders cost milliseconds of parsing on both sides), elsewhere a VALUES list."""
    if connection.vendor == "postgresql":
        columns = [array_param(c) for c in zip(*rows)] if rows else [[] for _ in types]
        return "SELECT * FROM unnest(" + ", ".join(f"%s::{t}[]" for t in types) + ")", columns
    one = "(" + ", ".join(["%s"] * len(types)) + ")"
    return "VALUES " + ", ".join([one] * len(rows)), [v for row in rows for v in row]


def array_param(values) -> str | list:
    """A column of values as a parameter cast to a Postgres array (`%s::bigint[]`): the array's text when
    every value is a plain int, str, float, bool, aware datetime or None, else the list (psycopg's way).

    psycopg writes a list's text in Python element by element, through a regular expression for each string:
    about a microsecond a value, and a batch's writes pass tens of thousands. Joined here it is a tenth."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if not kinds <= _LITERAL_KINDS:
        return list(values)
    if kinds <= {int}:
        return "{" + ",".join(["NULL" if v is None else str(v) for v in values]) + "}"
    if kinds <= {str}:
        return "{" + ",".join(["NULL" if v is None else _quoted(v) for v in values]) + "}"
    out = []
    for v in values:
        if v is None:
            out.append("NULL")
        elif type(v) is str:
            out.append(_quoted(v))
        elif type(v) is datetime.datetime:
            if v.tzinfo is None:
                return list(values)  # naive: what it means is Django's to say
            out.append('"' + v.isoformat(" ") + '"')
        elif type(v) is float:
            if v != v or v in (_INF, -_INF):
                return list(values)
            out.append(repr(v))
        elif type(v) is bool:
            out.append("t" if v else "f")
        else:
            out.append(str(v))
    return "{" + ",".join(out) + "}"


def _quoted(text: str) -> str:
    """A string as an element of an array's text: in double quotes, its backslashes and quotes escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_LITERAL_KINDS = {int, str, float, bool, datetime.datetime}
_INF = float("inf")


def lock_in_order(model, column: str, values) -> None:
    """Lock the rows whose `column` is one of `values`, in the order of `column`, in the caller's transaction.

    A multi-row UPDATE locks its rows in whatever order its plan visits them (a row's place in the table
    moves with every update), so two transactions updating overlapping sets of nodes (two workers'
    reservations, the mirror's counters, the binder's generations) could each hold a row the other waits for:
    Postgres then aborts one (a deadlock). Taken first in one order, the locks only ever queue. A no-op
    elsewhere (SQLite locks the whole database)."""
    values = sorted(set(values))
    if not values or connection.vendor != "postgresql":
        return
    field = model._meta.get_field(column)
    table, name = model._meta.db_table, field.column
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE {name} = ANY(%s::{_array_type(field)}[]) ORDER BY {name} FOR UPDATE",
                       [array_param(values)])


def update_from_values(model, fields: list[str], rows: list[tuple], *, key: str = "id",
                       where: str = "", returning: bool = False) -> list:
    """UPDATE model SET field = v.field ... FROM (rows) v WHERE model.key = v.key [AND where].

    `rows` are (key, *fields) tuples. `where` may refer to the table by its name and to `v`.
    Returns the keys of the updated rows when `returning` is set.
    """
    if not rows:
        return []
    table = model._meta.db_table
    meta_fields = [model._meta.get_field(key), *(model._meta.get_field(f) for f in fields)]
    columns = [f.column for f in meta_fields]
    postgres = connection.vendor == "postgresql"

    def cast(i: int, f) -> str:
        # Postgres cannot type a VALUES column that is NULL in every row: say the type.
        return f"CAST(v.{columns[i]} AS {_db_type(f)})" if postgres else f"v.{columns[i]}"

    preps = [_prep(f) for f in meta_fields]
    source, params = rows_source([_array_type(f) for f in meta_fields],
                                 [tuple(prep(value) for prep, value in zip(preps, row)) for row in rows])
    sets = ", ".join(f"{columns[i]} = {cast(i, f)}" for i, f in enumerate(meta_fields) if i > 0)
    sql = (f"WITH v({', '.join(columns)}) AS ({source}) "
           f"UPDATE {table} SET {sets} FROM v WHERE {table}.{columns[0]} = {cast(0, meta_fields[0])}")
    if postgres:
        # The keys again, as an array the planner can look up: it cannot estimate an unnest, so it joined
        # every row of the table (a hash join over a sequential scan: a statement's cost grew with the
        # table, 1.5 ms at 11,000 pods) where an index scan reads only the batch's rows (0.4 ms).
        sql += f" AND {table}.{columns[0]} = ANY(%s::{_array_type(meta_fields[0])}[])"
        params = [*params, params[0]]
    if where:
        sql += f" AND ({where})"
    if returning:
        sql += f" RETURNING {table}.{columns[0]}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [r[0] for r in cursor.fetchall()] if returning else []


def _array_type(field) -> str:
    """The column's type as an array element (the serial types are their integers)."""
    kind = _db_type(field)
    return {"bigserial": "bigint", "serial": "integer", "smallserial": "smallint"}.get(kind, kind)


def _db_type(field) -> str:
    """field.db_type on this connection's backend, worked out once per field and backend: Django formats it
    afresh on every call (through the connection proxy and the backend's type table), and a batch's writes
    asked it dozens of times."""
    memo = field.__dict__.setdefault("_schedboard_db_type", {})
    vendor = connection.vendor
    kind = memo.get(vendor)
    if kind is None:
        kind = memo[vendor] = field.db_type(connection)
    return kind


class JSONText(str):
    """A JSON field's value already encoded (as its writer built the text faster than json.dumps would):
    insert_many writes it as it is, and the column parses it (jsonb keeps values, not text)."""


def insert_many(model, objs: list) -> None:
    """Insert many rows and set their primary keys: COPY on Postgres (one stream, no per-value
    quoting in Python), bulk_create elsewhere."""
    if not objs:
        return
    if connection.vendor != "postgresql":
        _decode_json_text(model, objs)
        model.objects.bulk_create(objs)
        return
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    table = meta.db_table
    # (attname, prep) per field; a field that fills itself on save (auto_now) goes through pre_save.
    plain = [(f.attname, _copy_prep(f)) for f in fields]
    presave = [i for i, f in enumerate(fields) if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)]
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor  # the psycopg cursor: COPY is not in Django's API
        cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{table}', '{meta.pk.column}')) "
                       f"FROM generate_series(1, %s)", [len(objs)])
        ids = [row[0] for row in cursor.fetchall()]
        columns = ", ".join([meta.pk.column, *(f.column for f in fields)])
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for pk, obj in zip(ids, objs):
                state = obj.__dict__
                values = [pk, *(prep(state[attname]) for attname, prep in plain)]
                for i in presave:
                    values[i + 1] = plain[i][1](fields[i].pre_save(obj, add=True))
                copy.write_row(values)
    for pk, obj in zip(ids, objs):
        obj.pk = pk
        obj._state.adding = False


def new_row(model, **values):
    """A new instance of `model` with these attribute values (attnames: `pod_id`, not `pod`) and every other
    field at its default, for insert_many: what Model.__init__ makes, without its work per field and keyword
    (a few microseconds a field, on every attempt of the loop). No model signals are sent."""
    defaults = model.__dict__.get("_schedboard_defaults")
    if defaults is None:
        defaults = [(f.attname, f.default if f.has_default() and callable(f.default) else None, f.get_default())
                    for f in model._meta.concrete_fields]
        model._schedboard_defaults = defaults
    obj = model.__new__(model)
    obj._state = ModelState()
    state = obj.__dict__
    for name, factory, value in defaults:
        state[name] = factory() if factory is not None else value
    state.update(values)
    return obj


def _decode_json_text(model, objs: list) -> None:
    """The values of JSONText back to Python (bulk_create would store the text as a JSON string)."""
    names = [f.attname for f in model._meta.concrete_fields if isinstance(f, models.JSONField)]
    for obj in objs:
        for name in names:
            value = obj.__dict__.get(name)
            if type(value) is JSONText:
                obj.__dict__[name] = json.loads(value)


# ---- values as the database takes them -------------------------------------------------------------
# Field.get_db_prep_save costs a few microseconds a value through Django's layers; a batch write has
# tens of thousands. For the plain types the driver takes as they are, the value passes straight
# through (after the same type check Django's get_prep_value would make); anything else takes
# Django's way.

_PLAIN = ((models.IntegerField, int), (models.FloatField, float), (models.CharField, str), (models.TextField, str),
          (models.BooleanField, bool))


def _prep(field):
    """A function preparing values of `field` for a query parameter, as get_db_prep_save does."""
    memo = field.__dict__.get("_schedboard_prep")
    if memo is not None:
        return memo
    slow = field.get_db_prep_save

    def django(value):
        return slow(value, connection)

    prep = django
    if _plain_json(field):
        prep = _json(field.encoder, django)
    elif not field.is_relation and type(field).get_db_prep_save is models.Field.get_db_prep_save:
        for kind, py in _PLAIN:
            if isinstance(field, kind) and type(field).get_prep_value is kind.get_prep_value:
                prep = _passing(py, django)
                break
        if isinstance(field, models.DateTimeField) and type(field).get_prep_value is models.DateTimeField.get_prep_value:
            def prep(value, django=django):
                # An aware datetime is what get_db_prep_value hands the driver unchanged (USE_TZ).
                if type(value) is datetime.datetime and value.tzinfo is not None:
                    return value
                return django(value)
    elif field.is_relation and (field.many_to_one or field.one_to_one) and field.concrete:
        target = field.target_field
        if isinstance(target, models.IntegerField):
            prep = _passing(int, django)
    field.__dict__["_schedboard_prep"] = prep
    return prep


def _copy_prep(field):
    """As _prep, for a COPY row (a JSON value goes as its text there too: what the jsonb column parses)."""
    return _prep(field)


def _plain_json(field) -> bool:
    """A JSONField as Django's own (no subclass changing how its values are prepared)."""
    kind = type(field)
    return (isinstance(field, models.JSONField) and kind.get_db_prep_save is models.JSONField.get_db_prep_save
            and kind.get_db_prep_value is models.JSONField.get_db_prep_value
            and kind.get_prep_value is models.JSONField.get_prep_value)


_JSON_KINDS = {dict, list, str, int, float, bool}


def _json(encoder, django):
    """A JSON field's values as their text, the text Django's adapter would have the driver write (json.dumps with
    the field's encoder): the jsonb column, or a `jsonb[]` parameter's element, parses it. Handed psycopg's Jsonb
    wrapper instead, an array of them went through the driver's list dumper, which quotes each element's text
    with a regular expression per character to escape: 4.6 % of the kube replica's CPU, writing manifests."""
    def prep(value):
        kind = type(value)
        if kind in _JSON_KINDS:
            return json.dumps(value, cls=encoder)
        if value is None:
            return None  # SQL NULL, as Django stores None (JSON null is Value(None, JSONField()): Django's way)
        if kind is JSONText:
            return str(value)
        if hasattr(value, "as_sql") or isinstance(value, Promise):
            return django(value)
        return json.dumps(value, cls=encoder)
    return prep


def _passing(py: type, django):
    if py is int:
        def prep(value):
            if value is None or type(value) is int:
                return value
            # Django's answer, without psycopg's Int4/Int8 wrapper (an array mixing the two is refused).
            done = django(value)
            return int(done) if isinstance(done, int) and not isinstance(done, bool) else done
        return prep

    def prep(value):
        if value is None or type(value) is py:
            return value
        return django(value)
    return prep


# ---- model rows without the ORM's query building -------------------------------------------------------


def select_models(model, where: str, params=()) -> list:
    """The rows of `model` WHERE `where` (SQL over the table's own columns), as the instances a queryset would
    give (every field, its value converted from the database's as the ORM's compiler converts it).

    For a statement run once per batch whatever the batch holds: the ORM builds and compiles the query again on
    every call, the WHERE and the SELECT of every field, which cost more than Postgres took to run it (the
    nominated pods' query, finding none, 0.57 ms against 0.07 ms by hand)."""
    db = connection.alias
    real = connections[db]  # (the proxy's attribute lookups, per value converted, were a cost of their own)
    columns, names, converters = _model_columns(model, real)
    with real.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {model._meta.db_table} WHERE {where}", params)
        rows = cursor.fetchall()
    out = []
    for row in rows:
        if converters:
            row = list(row)
            for i, funcs, expression in converters:
                value = row[i]
                for func in funcs:
                    value = func(value, expression, real)
                row[i] = value
        out.append(model.from_db(db, names, row))
    return out


def _model_columns(model, real) -> tuple[str, list[str], list]:
    """(the SELECT list of every concrete field, their attnames, (position, converters, column) for the values
    the backend or the field converts), as the ORM's compiler has them; worked out once per model and backend."""
    key = (model, real.vendor)
    memo = _COLUMNS.get(key)
    if memo is None:
        fields = model._meta.concrete_fields
        table = model._meta.db_table
        compiler = real.ops.compiler("SQLCompiler")(model.objects.all().query, real, real.alias)
        converters = compiler.get_converters([f.get_col(table) for f in fields])
        memo = (", ".join(f"{table}.{real.ops.quote_name(f.column)}" for f in fields), [f.attname for f in fields],
                [(i, funcs, expression) for i, (funcs, expression) in sorted(converters.items())])
        _COLUMNS[key] = memo
    return memo


_COLUMNS: dict = {}


def in_list(column: str, values) -> tuple[str, list]:
    """`column` is one of `values`, as SQL and its parameters: one array parameter on Postgres (psycopg splits a
    statement with hundreds of placeholders slower than Postgres runs it), placeholders elsewhere."""
    values = list(values)
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [values]
    if not values:
        return "1 = 0", []
    return f"{column} IN ({', '.join(['%s'] * len(values))})", values
