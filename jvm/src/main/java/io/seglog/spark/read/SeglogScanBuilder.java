package io.seglog.spark.read;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * Filter pushdown (timestamp/offset/partition/topic filters become seeks and bounds; every filter
 * reported as handled is applied exactly by the readers), column pruning, and aggregate pushdown (Spark asks
 * only when every filter was pushed; {@link PushedAggregate} says which aggregates are answered exactly). A new builder per query,
 * so no query's pushdown leaks into another's (unlike the Python Data Source API's reader).
 */
public final class SeglogScanBuilder implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns,
        SupportsPushDownAggregates {
    private final ReadOptions opts;
    private StructType schema;
    private ScanBounds bounds = ScanBounds.NONE;
    private Filter[] pushed = new Filter[0];
    private PushedAggregate aggregate;   // null: Spark aggregates the rows

    public SeglogScanBuilder(ReadOptions opts, StructType schema) {
        this.opts = opts;
        this.schema = schema;
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
        if (!opts.filterPushdown) return filters;
        ScanBounds[] out = new ScanBounds[1];
        List<Filter> rest = FilterTranslator.push(filters, out);
        bounds = out[0];
        List<Filter> handled = new ArrayList<>(Arrays.asList(filters));
        handled.removeAll(rest);
        pushed = handled.toArray(new Filter[0]);
        return rest.toArray(new Filter[0]);
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed;
    }

    @Override
    public void pruneColumns(StructType required) {
        schema = required;
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
        aggregate = PushedAggregate.of(aggregation);
        return aggregate != null;
    }

    /** The answer is each group's final value: Spark need not aggregate again. */
    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
        return PushedAggregate.of(aggregation) != null;
    }

    @Override
    public Scan build() {
        if (aggregate != null) return new AggregateScan(opts, bounds, aggregate);
        return new SeglogScan(opts, bounds, schema);
    }
}
