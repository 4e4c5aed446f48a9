"""A PySpark worker daemon that loads seglog before it forks workers.

Spark forks each Python worker from a daemon process. With the stock daemon every new worker
imports pyarrow, numba and seglog and loads the compiled codec on its first task (0.5 s on a quiet
2-core machine, seconds under load): that is most of the time to first row of a replay and of a
small micro-batch's write. This daemon does that once, then serves as `pyspark.daemon` does, so
forked workers start warm. Enable it with the Spark conf

    spark.python.daemon.module = seglog.worker_daemon

(`seglog.sink.session.local_session` does). If anything here fails, workers simply start cold.
"""
from __future__ import annotations

import os
import shutil
import tempfile


def _warm() -> None:
    try:
        import numpy as np
        import pyarrow as pa

        import seglog.source.reader  # noqa: F401  (the data source's task code)
        from seglog.indexer import Log

        folder = tempfile.mkdtemp(prefix="seglog-warm-")
        try:
            with Log.open(os.path.join(folder, "warm-0"), {"index.interval.bytes": 0}) as log:
                log.append_columns(pa.array([b"v"] * 3, pa.binary()), pa.array([b"k"] * 3, pa.binary()),
                                   np.array([1, 2, 3], dtype=np.int64))
                list(log.read_arrow(0))
                log.offset_for_timestamp(2)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except Exception:  # never stop Spark's workers from starting
        pass


_warm()

from pyspark.daemon import manager  # noqa: E402

if __name__ == "__main__":
    manager()
