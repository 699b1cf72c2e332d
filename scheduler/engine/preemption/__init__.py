"""Preemption (upstream's framework/preemption and plugins/defaultpreemption): when a pod fits
nowhere, find the node where evicting the fewest, least important pods lets it in."""
