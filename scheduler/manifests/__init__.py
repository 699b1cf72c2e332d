"""Kubernetes v1 objects in, the engine's NodeSpec and PodSpec out, refusing what the API server would refuse
with its words at the field path: files.py reads kubectl-style files, objects.py one object (also for the
kube mirror and stored manifests), pod.py, node.py and resources.py decode and validate, errors.py places
each problem. Imports nothing from Django.
"""
