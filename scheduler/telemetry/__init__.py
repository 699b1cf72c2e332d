"""What the scheduling service tells whoever listens: the live feed (live.py) and the Prometheus metrics
(metrics.py). Upper layers subscribe or scrape; nothing here imports them."""
