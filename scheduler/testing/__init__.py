"""Harnesses for tests: real worker processes, a loopback kube-apiserver, the deploy's settings, the browser
stack, the objects and helpers tests share, and the fixtures the root conftest.py registers (fixtures.py,
browser.py). Never imported by a production module (import-linter checks it)."""
