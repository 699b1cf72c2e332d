"""The settings the kubernetes deploy produces, for tests: deploy/'s environment read from its manifests
and loaded by config/settings.py in a fresh process, exactly as a pod of the deploy starts."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

BASE_DIR = Path(__file__).resolve().parents[2]
DEPLOY = BASE_DIR / "deploy"

# What the deploy's settings are checked for.
_PRINTED = ("ALLOWED_HOSTS", "DEBUG", "HTTPS", "SCHEDBOARD_METRICS_PORT")


def deploy_environment() -> dict[str, str]:
    """The variables a deploy pod gets: the ConfigMap schedboard-env plus the example connection Secret."""
    env: dict[str, str] = {}
    for name in ("config.yaml", "secret.example.yaml"):
        for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
            if doc and doc["metadata"]["name"] in ("schedboard-env", "schedboard-connection"):
                env.update({k: str(v) for k, v in (doc.get("data") or doc.get("stringData")).items()})
    return env


@functools.cache
def deploy_settings() -> dict:
    """config.settings loaded with the deploy's environment and nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SCHEDBOARD_", "PROMETHEUS_"))}
    env.update(deploy_environment())
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    # A volume mount in the pod; any writable directory here.
    env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="schedboard-deploy-metrics-")
    code = ("import json, django; from django.conf import settings; django.setup(); "
            f"print(json.dumps({{n: getattr(settings, n, None) for n in {_PRINTED!r}}}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
