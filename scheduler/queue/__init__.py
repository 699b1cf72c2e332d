"""The scheduling queue outside the engine: the process's queue (queues.py: Redis when REDIS_URL is set,
else the engine's in-memory form), the Redis form (redis_queue.py, one Lua script per operation in lua/),
and waking workers (kick.py). The contract both forms keep is the engine's (engine/queue.py), checked by
one suite run against both (test_queue_contract.py)."""
