"""The cluster as schedboard holds it: apply and delete services (v1 objects in, rows and queue entries
out), the built-in simulation, and dry runs."""
