"""docker-compose.yml runs the full stack: postgres, redis, web (daphne), worker (celery), beat."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

BASE_DIR = Path(__file__).resolve().parent.parent


def test_compose_runs_every_process_of_the_stack_on_postgres_and_redis():
    compose = yaml.safe_load((BASE_DIR / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    assert services["web"]["command"][:1] == ["daphne"] and "config.asgi:application" in services["web"]["command"]
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"].startswith("redis://")


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_compose_file_is_valid_for_docker_compose():
    env = {**os.environ, "DJANGO_SECRET_KEY": "compose-test-key"}
    result = subprocess.run(["docker-compose", "config", "-q"], cwd=BASE_DIR, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_compose_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    result = subprocess.run(["docker-compose", "config", "-q"], cwd=BASE_DIR, capture_output=True, text=True, env=env)
    assert result.returncode != 0 and "DJANGO_SECRET_KEY" in result.stderr


def test_compose_runs_without_debug_by_default():
    compose = yaml.safe_load((BASE_DIR / "docker-compose.yml").read_text())
    env = compose["x-app"]["environment"]
    assert env["DJANGO_DEBUG"] == "${DJANGO_DEBUG:-false}"
