"""Scenarios (`manage.py scenario FILE`, `manage.py run --scenario FILE`): a YAML timeline of what happens to
the cluster (nodes failing, drains, scaling, applies and deletes), read and checked whole before anything
runs (spec.py), then played against the cluster while the control plane reacts (runner.py)."""
