"""``iglearn serve``: a self-hosted IGL decision service that learns while it serves.

- :mod:`~iglearn.service.config`: the TOML configuration (dataclasses, validated at start);
- :mod:`~iglearn.service.app`: the HTTP API (Starlette on uvicorn);
- :mod:`~iglearn.service.http`: the HTTP connection (uvicorn's, its request heads bounded);
- :mod:`~iglearn.service.operator_log`: the operator's log on standard error;
- :mod:`~iglearn.service.exploration`: how actions are drawn (E2G schedules or epsilon);
- :mod:`~iglearn.service.learning`: the background re-fitting worker process;
- :mod:`~iglearn.service.supervisor`: the worker's supervision (restarts with back-off);
- :mod:`~iglearn.service.storage`: the storage interface and its SQLite implementation;
- :mod:`~iglearn.service.keys`: hashed API keys with roles;
- :mod:`~iglearn.service.metrics`: Prometheus metrics.

The Python client is :class:`iglearn.client.Client`.
"""
