# One image for every schedboard process: web (daphne), worker (celery), beat (celery beat).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# PYTHONDONTWRITEBYTECODE keeps the image read-only at run time, so compile once here: otherwise every
# process start (each worker, beat, `kube run`) compiles ~150 of our modules again.
RUN python -m compileall -q config scheduler dashboard
RUN useradd --create-home schedboard && mkdir -p /metrics-data && chown -R schedboard /app /metrics-data
USER schedboard
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "config.asgi:application"]
