"""Configuration versions: the active KubeSchedulerConfiguration and its selectors (profiles.py), the
services that save, restore and export versions, the admin's profile forms, and what-if."""
