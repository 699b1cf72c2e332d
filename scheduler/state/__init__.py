"""Shared state in Postgres: reservations (compare-and-set on node usage), the node snapshot the engine
schedules against, SQL helpers, and Kubernetes events (EventSpec, events_record)."""
