"""Scale-out: probe sweeps and sharded feature extraction, in-process or on a Ray cluster.

Sits above ``probes/`` (it runs probes, it is not one) and beside ``viz/``; nothing below imports it.
Ray is an optional extra (``requirements-cluster.txt``): every module imports it only inside the
functions that need it, and without it only ``--ray`` is refused.

    plan.py         SweepTask, plan_sweep (baselines, then model × probe × seed), finished (resume)
    identity.py     a model's content key (its files' digests, a hub model's resolved commit), hub configs
    tasks.py        run_task: one task's body, in-process or in a Ray worker (batch budget, fault hook)
    resources.py    a task's CPUs / GPUs / memory, from the model's files (or hub config) and --device
    executors.py    InProcess and OnRay (one actor per model; a dead worker's or OOM task retried at half budget)
    sweep.py        run_sweep: skip finished tasks, save results as they arrive, progress lines
    shards.py       sharded extraction: shard plan, ShardWorker (one model load), ShardedEmbedder, commit
    extract.py      extract_sharded: actors (ray.util.ActorPool) or one in-process worker
    datasets.py     the datasets ``extract`` knows, under the probes' feature-cache keys
    storage.py      Store (fsspec: paths, s3://, gs://), push/pull/verify/drop feature-cache entries
                    (a version prefix, then one pointer object; checked before skipped, repaired)
    ray_session.py  connect("local" | ADDRESS)
    cli.py          ``python -m probes sweep`` and ``python -m probes extract``
    __main__.py     ``python -m cluster store URL list|verify|push|drop``: the shared tier's entries
    ray-cluster.yaml  ``ray up`` config of a GPU cluster (docs/scaling.md)
"""
