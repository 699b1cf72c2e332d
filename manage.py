#!/usr/bin/env python
"""Django's command-line utility for schedboard."""
import os
import sys

if __name__ == "__main__":
    if sys.argv[1:3] == ["kube", "run"]:
        # A replica's start-up imports and builds what lives as long as the process: the cyclic collector
        # would walk it all for nothing (twice, ~0.1 s of CPU before the first binding). The command freezes
        # it and enables the collector again (scheduler/loop/collector.py start_up_done).
        import gc

        gc.disable()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
