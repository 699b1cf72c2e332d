"""The control plane around the scheduler for the simulated cluster: one module per upstream controller
(PodGC, node lifecycle, taint eviction, ReplicaSet, Deployment, StatefulSet), plus drain and the scenario
runner. They use the cluster's services, state and queue; never the loop, the backends or the tasks."""
