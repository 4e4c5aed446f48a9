package io.seglog.spark;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SQLExecution;

/**
 * The Spark internals {@link io.seglog.spark.write.ForeachBatchQuery} reads, the one place that reaches them by reflection (their
 * Scala types differ across Spark lines: {@code classic.SparkSession} from 4.0, Scala 2.12's Seq on 3.5; and
 * {@code sparkSessionForStream} is a private field before 4.1). Checked in the bytecode of 4.1.1 and 4.3.0 and in
 * Spark's sources for 3.5/4.0 (docs/internals.md, "The writer of a foreachBatch write"):
 * <ul>
 * <li>{@code SparkSession.sharedState().activeStreamingQueries()}: every active query of the JVM (all sessions,
 *   Spark Connect's too) by id, to its {@code StreamExecution};</li>
 * <li>{@code StreamExecution.sparkSessionForStream}: the cloned session every micro-batch of that query runs in;
 *   {@code ForeachBatchSink} hands the function a Dataset of that session over a {@code LogicalRDD} that keeps it
 *   (its {@code otherCopyArgs}), so a write of the batch, on any thread or through Spark Connect, carries it;</li>
 * <li>{@code SQLExecution.getQueryExecution(spark.sql.execution.id)}: the executing write (its session and plan),
 *   set on the calling thread before the write is planned.</li>
 * </ul>
 * Any of them missing (a Spark that changed them) reads as "not found": the caller then refuses, never guesses.
 */
public final class QuerySessions {
    private static final int MAX_PLAN_NODES = 100_000;   // a plan is the user's: bounded walk

    private QuerySessions() {}

    /** Every active streaming query's id to the session its micro-batches run in. */
    public static Map<String, Object> active(SparkSession any) {
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            Object shared = call(any, "sharedState");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) call(shared, "activeStreamingQueries")).entrySet()) {
                Object session = streamSession(e.getValue());
                if (session != null) out.put(e.getKey().toString(), session);
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            return Map.of();
        }
        return out;
    }

    /** The name of the active streaming query {@code queryId} (its {@code StreamExecution.name}), null when it has
     *  none or the query is not found (ConsumerPositions records it beside the id, which alone identifies it). */
    public static String queryName(String queryId) {
        try {
            Object shared = call(SparkSession.active(), "sharedState");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) call(shared, "activeStreamingQueries")).entrySet()) {
                if (e.getKey().toString().equals(queryId)) {
                    Object name = call(e.getValue(), "name");
                    return name instanceof String ? (String) name : null;
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // not found: the id alone
        }
        return null;
    }

    /**
     * The sessions the executing write on this thread comes from: its own, and each {@code LogicalRDD}'s in its
     * plan (identity set). Empty when no write executes here.
     */
    public static Set<Object> ofExecutingWrite(SparkContext sc) {
        Set<Object> out = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        String id = sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY());
        if (id == null) return out;
        try {
            Object qe = SQLExecution.getQueryExecution(Long.parseLong(id));
            if (qe == null) return out;
            out.add(call(qe, "sparkSession"));
            Deque<Object> todo = new ArrayDeque<>(List.of(call(qe, "logical")));
            for (int seen = 0; !todo.isEmpty() && seen < MAX_PLAN_NODES; seen++) {
                Object node = todo.pop();
                if (node.getClass().getSimpleName().equals("LogicalRDD")) {
                    for (Object arg : seq(call(node, "otherCopyArgs"))) if (arg instanceof SparkSession) out.add(arg);
                }
                todo.addAll(seq(call(node, "children")));
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // unreadable: the sessions found so far
        }
        out.remove(null);
        return out;
    }

    private static Object streamSession(Object exec) throws ReflectiveOperationException {
        try {
            return call(exec, "sparkSessionForStream");
        } catch (NoSuchMethodException e) {
            for (Class<?> c = exec.getClass(); c != null; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    if (f.getName().endsWith("sparkSessionForStream")) {
                        f.setAccessible(true);
                        return f.get(exec);
                    }
                }
            }
            return null;
        }
    }

    private static Object call(Object target, String method) throws ReflectiveOperationException {
        Method m = target.getClass().getMethod(method);
        m.setAccessible(true);
        return m.invoke(target);
    }

    private static List<Object> seq(Object scalaIterable) {
        List<Object> out = new ArrayList<>();
        scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) scalaIterable).iterator();
        while (it.hasNext()) out.add(it.next());
        return out;
    }
}
