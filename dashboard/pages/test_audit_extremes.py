"""/bindings/ with extreme filter values and page links, on Postgres (the test database) and on SQLite
(the embedded mode, in a subprocess with DATABASE_URL unset): a time or id the database cannot hold is a
form error (400), never a server error; the extremes it can hold still list (200)."""

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings

DAMAGED = "This page link is damaged; start again from the first page."
OUT_OF_RANGE = "is out of range"
BIGINT_MAX = 2**63 - 1


def cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


# (query, expected status, text the page must show)
CASES = [
    # form fields: times whose UTC falls outside years 1..9999, ids no column holds
    ("since=0001-01-01T00:00:00%2B05:00", 400, OUT_OF_RANGE),
    ("until=0001-01-01T04:59:59%2B05:00", 400, OUT_OF_RANGE),
    ("since=9999-12-31T23:59:59-05:00", 400, OUT_OF_RANGE),
    ("until=9999-12-31T20:00:00-14:00", 400, OUT_OF_RANGE),
    ("since=10000-01-01T00:00:00Z", 400, "Enter a valid date/time."),
    ("since=0000-12-31T23:59:59Z", 400, "Enter a valid date/time."),
    ("version=2147483648", 400, "Ensure this value is less than or equal to 2147483647."),
    (f"version={10**30}", 400, "Ensure this value is less than or equal to 2147483647."),
    (f"limit={10**30}", 400, "Ensure this value is less than or equal to 500."),
    # page links (both directions)
    ("after=" + cursor("0001-01-01T00:00:00+05:00|1"), 400, DAMAGED),
    ("before=" + cursor("0001-01-01T00:00:00+05:00|1"), 400, DAMAGED),
    ("after=" + cursor("9999-12-31T23:59:59-05:00|1"), 400, DAMAGED),
    ("after=" + cursor(f"2026-11-30T10:00:00+00:00|{BIGINT_MAX + 1}"), 400, DAMAGED),
    ("before=" + cursor(f"2026-11-30T10:00:00+00:00|{10**30}"), 400, DAMAGED),
    ("after=" + cursor("2026-11-30T10:00:00+00:00|-1"), 400, DAMAGED),
    ("after=" + cursor("2026-11-30T10:00:00+00:00|" + "9" * 5000), 400, DAMAGED),  # int() refuses > 4300 digits
    ("after=" + cursor("2026-11-30T10:00:00+00:00|1e3"), 400, DAMAGED),
    ("after=" + cursor("2026-11-30T10:00:00+00:00|1|2"), 400, DAMAGED),
    ("after=" + cursor("2026-11-30T10:00:00|1"), 400, DAMAGED),  # naive
    ("after=" + cursor("99999-01-01T00:00:00+00:00|1"), 400, DAMAGED),
    # the extremes that fit still list
    ("since=0001-01-01T00:00:00Z", 200, "Audit"),
    ("since=0001-01-01T05:00:00%2B05:00", 200, "Audit"),
    ("until=9999-12-31T23:59:59Z", 200, "Audit"),
    ("until=9999-12-31T18:59:59-05:00", 200, "Audit"),
    ("version=2147483647", 200, "Audit"),
    ("after=" + cursor("0001-01-01T00:00:00+00:00|1"), 200, "Audit"),
    ("after=" + cursor(f"9999-12-31T23:59:59.999999+00:00|{BIGINT_MAX}"), 200, "Audit"),
    ("before=" + cursor("0001-01-01T00:00:00+00:00|0"), 200, "Audit"),
    ("after=" + cursor("0001-01-01T00:00:00+00:00|1") + "&format=csv", 200, "id,started_at"),
    ("after=" + cursor(f"2026-11-30T10:00:00+00:00|{BIGINT_MAX + 1}") + "&format=json", 400, DAMAGED),
    ("since=0001-01-01T00:00:00%2B05:00&format=csv", 400, OUT_OF_RANGE),
]


def _text(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode().replace("&#x27;", "'").replace("&quot;", '"')


@pytest.mark.django_db
@pytest.mark.parametrize("query,status,text", CASES)
def test_extreme_values_on_postgres(admin_client, query, status, text):
    from django.utils import timezone
    from scheduler.models import Attempt

    Attempt.objects.create(namespace="d", pod_name="p", number=1, result="scheduled", started_at=timezone.now())
    response = admin_client.get(f"/bindings/?{query}")
    assert (response.status_code, text in _text(response)) == (status, True)


SCRIPT = textwrap.dedent("""
    import json, sys
    import django
    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from scheduler.models import Attempt

    setup_test_environment()
    call_command("migrate", verbosity=0)
    Attempt.objects.create(namespace="d", pod_name="p", number=1, result="scheduled", started_at=timezone.now())
    client = Client(raise_request_exception=False)
    client.force_login(get_user_model().objects.create_superuser("admin", "a@example.com", "pw"))
    out = []
    for query in json.load(sys.stdin):
        r = client.get("/bindings/?" + query)
        try:
            body = b"".join(r.streaming_content) if r.streaming else r.content
        except Exception as e:  # an export that fails part way is as broken as a 500
            out.append([500, f"while streaming: {e!r}"])
            continue
        out.append([r.status_code, body.decode().replace("&#x27;", "'").replace("&quot;", '"')])
    print(json.dumps(out))
""")


def test_extreme_values_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_DEBUG", "DJANGO_HTTPS")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "SCHEDBOARD_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
                "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")})
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=Path(settings.BASE_DIR), env=env,
                            input=json.dumps([q for q, _, _ in CASES]), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    wrong = [(q, status, body[:300] if status == 500 or text not in body else "")
             for (q, want, text), (status, body) in zip(CASES, got) if (status, text in body) != (want, True)]
    assert wrong == []
