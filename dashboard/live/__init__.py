"""The live layer: workers publish small event batches after commit (publish.py); each websocket
coalesces them into a few bounded frames a second (coalesce.py, consumers.py), with a full snapshot
after any gap (feeds.py)."""
