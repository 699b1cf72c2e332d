"""The fault suite (`manage.py chaos`): a run of pods through real workers while faults are injected
on a seeded schedule, then the promises checked from first principles (no pod lost, no node over its
allocatable, no pod bound twice) and the recovery after each fault measured.

A harness like bench.py: production modules never import it.

    plan.py       the seeded run: nodes, pods, arrivals, faults, hostile manifests (pure)
    hostile.py    the hostile manifests, as a user would apply them
    pgproxy.py    a loopback TCP proxy in front of Postgres that can drop every connection
    verdict.py    the checks and the recovery times (pure)
    simulated.py  the run on the simulated backend; kube.py on the kubernetes backend
"""
