"""Benchmarks behind `manage.py bench`: e2e (scheduler_perf's SchedulingBasic through the engine, the
per-node reference and real workers), kube (the same through a loopback kube-apiserver), growth (how the
audit tables grow per pod) and viewers (headless dashboard clients). They may import anything, testing
harnesses and the dashboard included; nothing in production imports them but the bench command."""
