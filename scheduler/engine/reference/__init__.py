"""A plain per-node reference implementation of the plugins, read as literally from kube-scheduler
as we can. Only tests and the benchmark use it: it is the yardstick the columnar engine is checked
against (with hypothesis) and measured against."""
