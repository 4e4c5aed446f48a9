"""A `format("seglog")` append run on a thread of its own, so that a test can act while it waits at a fail point
(`seglog.test.failPoint`, CrashPoint in the jar) and then see how it ended. One home for the tests of a failing
write's restore and of what runs beside it (tests/sink/test_dsv2_write_restore.py,
tests/cli/test_import_beside_a_write.py)."""
from __future__ import annotations

import threading

FAIL_POINT = "seglog.test.failPoint"


def write_in_thread(df, root, *, topic: str, partitions: int, version: int, **options) -> dict:
    """Starts `df`'s idempotent append (txnAppId "app", txnVersion `version`); returns {"thread": ...}, and
    "error" once the write failed (the failure these tests ask for)."""
    out: dict = {}

    def run():
        try:
            writer = (df.write.format("seglog").mode("append").option("topic", topic)
                      .option("partitions", str(partitions)).option("txnAppId", "app")
                      .option("txnVersion", str(version)))
            for k, v in options.items():
                writer = writer.option(k, v)
            writer.save(str(root))
        except Exception as exc:        # the failure this test asks for
            out["error"] = exc

    out["thread"] = threading.Thread(target=run, daemon=True)
    out["thread"].start()
    return out
