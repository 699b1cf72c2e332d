"""The live layer: workers publish small event batches after commit (publish.py); each page's View
coalesces them into a few bounded frames a second, built and encoded once for all its sockets in the process
(fanout.py, coalesce.py, consumers.py), with a full snapshot after any gap (feeds.py)."""
