"""The Kubernetes side of the kubernetes backend: client, list+watch mirror, events, leader election, RBAC check."""
