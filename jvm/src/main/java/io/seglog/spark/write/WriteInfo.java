package io.seglog.spark.write;

import java.util.Map;

import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A write's info with other options: a catalog table's write (its root and topic, which Spark does not pass for
 *  INSERT INTO) plus the statement's own. */
public final class WriteInfo {
    private WriteInfo() {}

    public static LogicalWriteInfo withOptions(LogicalWriteInfo info, Map<String, String> options) {
        CaseInsensitiveStringMap merged = new CaseInsensitiveStringMap(options);
        return new LogicalWriteInfo() {
            @Override
            public CaseInsensitiveStringMap options() {
                return merged;
            }

            @Override
            public String queryId() {
                return info.queryId();
            }

            @Override
            public StructType schema() {
                return info.schema();
            }
        };
    }
}
