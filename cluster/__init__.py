"""Scale-out: probe sweeps and sharded feature extraction, in-process or on a Ray cluster.

Sits above ``probes/`` (it runs probes, it is not one) and beside ``viz/``; nothing below imports it.
Ray is an optional extra (``requirements-cluster.txt``): every module imports it only inside the
functions that need it, and without it only ``--ray`` is refused.

    plan.py         SweepTask, plan_sweep (baselines, then model × probe × seed), finished (resume)
    tasks.py        run_task: one task's body, in-process or in a Ray worker (batch budget, fault hook)
    resources.py    a task's CPUs / GPUs / memory, estimated from the model's files
    executors.py    InProcess and OnRay (retry a dead worker's task with half the batch budget)
    sweep.py        run_sweep: skip finished tasks, save results as they arrive, progress lines
    shards.py       sharded extraction: shard plan, ShardWorker (one model load), ShardedEmbedder, commit
    extract.py      extract_sharded: actors (ray.util.ActorPool) or one in-process worker
    datasets.py     the datasets ``extract`` knows, under the probes' feature-cache keys
    storage.py      Store (fsspec: paths, s3://, gs://), push/pull feature-cache entries with checksums
    ray_session.py  connect("local" | ADDRESS)
    cli.py          ``python -m probes sweep`` and ``python -m probes extract``
    ray-cluster.yaml  ``ray up`` config of a GPU cluster (docs/scaling.md)
"""
