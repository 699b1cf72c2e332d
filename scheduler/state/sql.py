"""Set-based writes the ORM has no cheap form for: many rows, each with its own values, in one statement.

Django's bulk_update builds a CASE per field per row and costs milliseconds per row in
Python; one UPDATE ... FROM (VALUES ...) does the same work in a single round trip.
"""

from __future__ import annotations

from django.db import connection


def update_from_values(model, fields: list[str], rows: list[tuple], *, key: str = "id",
                       where: str = "", returning: bool = False) -> list:
    """UPDATE model SET field = v.field ... FROM (VALUES rows) v WHERE model.key = v.key [AND where].

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
        return f"CAST(v.{columns[i]} AS {f.db_type(connection)})" if postgres else f"v.{columns[i]}"

    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    params = [f.get_db_prep_save(value, connection) for row in rows for f, value in zip(meta_fields, row)]
    sets = ", ".join(f"{columns[i]} = {cast(i, f)}" for i, f in enumerate(meta_fields) if i > 0)
    sql = (f"WITH v({', '.join(columns)}) AS (VALUES {', '.join([one] * len(rows))}) "
           f"UPDATE {table} SET {sets} FROM v WHERE {table}.{columns[0]} = {cast(0, meta_fields[0])}")
    if where:
        sql += f" AND ({where})"
    if returning:
        sql += f" RETURNING {table}.{columns[0]}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [r[0] for r in cursor.fetchall()] if returning else []


def insert_many(model, objs: list) -> None:
    """Insert many rows and set their primary keys: COPY on Postgres (one stream, no per-value
    quoting in Python), bulk_create elsewhere."""
    if not objs:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs)
        return
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    table = meta.db_table
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor  # the psycopg cursor: COPY is not in Django's API
        cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{table}', '{meta.pk.column}')) "
                       f"FROM generate_series(1, %s)", [len(objs)])
        ids = [row[0] for row in cursor.fetchall()]
        columns = ", ".join([meta.pk.column, *(f.column for f in fields)])
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for pk, obj in zip(ids, objs):
                values = [f.get_db_prep_save(f.pre_save(obj, add=True), connection) for f in fields]
                copy.write_row([pk, *values])
    for pk, obj in zip(ids, objs):
        obj.pk = pk
        obj._state.adding = False
