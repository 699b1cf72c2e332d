"""kubectl's face: its printers (tables, -o json objects, ages) and the command base the get/apply/delete/
explain commands share."""
