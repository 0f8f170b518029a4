"""The engine without Beam: the conversion on this machine's cores, in processes forked
from the run's own, the same steps (`steps/`) and bytes as Beam's `ConvertManifests`.

    pipeline.py  convert_locally: the run, stage by stage, then `steps.run_plan`'s
    read.py      the manifests into chunk files of rows, and the vocabulary
    pool.py      the worker processes: a queue of tasks, crashed and late rows isolated
    worker.py    one worker's conversion: its shards, sorted runs and tally
    write.py     the shards named, the extra layouts, a dead worker's files removed
"""
