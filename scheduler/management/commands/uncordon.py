"""`manage.py uncordon NODE...`: as kubectl uncordon (node/NAME uncordoned, or already uncordoned)."""

from .cordon import Command as CordonCommand


class Command(CordonCommand):
    help = "Mark simulated nodes schedulable again, like kubectl uncordon."
    desired = False
