"""The scheduling engine: pure Python + numpy, columnar over nodes. Imports nothing from Django."""
