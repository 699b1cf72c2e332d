"""Record a cluster's history as a trace, and replay it in virtual time through the real engine and
queue under one or more scheduler configurations (issue 14, "Record and replay")."""
