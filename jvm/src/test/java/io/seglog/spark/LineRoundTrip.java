package io.seglog.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.Trigger;

/**
 * A local write and read through {@code format("seglog")} on whatever Spark is on this JVM's classpath, for a
 * line no pip pyspark ships (Spark 3.5 for Scala 2.13: tests/lines/test_spark_35_scala_213.py). A batch write
 * with txnAppId/txnVersion, its re-run (skipped), a batch read and an AvailableNow stream read must each see the
 * 1000 rows written exactly once. Exit status 0 only then.
 */
public final class LineRoundTrip {
    private LineRoundTrip() {}

    public static void main(String[] args) throws Exception {
        String root = args[0];
        SparkSession s = SparkSession.builder().master("local[2]").config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2").getOrCreate();
        System.out.println("Spark " + s.version() + ", Scala " + scala.util.Properties.versionNumberString());
        Dataset<Row> df = s.range(1000).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST('v' AS BINARY) AS value");
        for (int run = 0; run < 2; run++) {
            df.write().format("seglog").mode("append").option("topic", "t").option("partitions", "3")
                .option("txnAppId", "round-trip").option("txnVersion", "0").save(root);
        }
        Dataset<Row> read = s.read().format("seglog").option("topic", "t").load(root);
        long rows = read.count();
        long keys = read.select("key").distinct().count();
        long partitions = read.select("partition").distinct().count();
        s.readStream().format("seglog").option("topic", "t").option("startingOffsets", "earliest").load(root)
            .writeStream().format("memory").queryName("streamed").trigger(Trigger.AvailableNow())
            .option("checkpointLocation", root + "-checkpoint").start().awaitTermination();
        long streamed = s.sql("SELECT * FROM streamed").count();
        s.stop();
        String got = "rows " + rows + ", distinct keys " + keys + ", partitions " + partitions + ", streamed " + streamed;
        boolean ok = rows == 1000 && keys == 1000 && partitions == 3 && streamed == 1000;
        System.out.println((ok ? "round trip ok: " : "round trip FAILED: ") + got);
        System.exit(ok ? 0 : 1);
    }
}
