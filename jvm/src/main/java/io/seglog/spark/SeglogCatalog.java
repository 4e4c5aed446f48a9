package io.seglog.spark;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import io.seglog.spark.format.InvalidTopicException;
import io.seglog.spark.format.RootPath;
import io.seglog.spark.format.TopicAdmin;
import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.format.TopicLayout;
import io.seglog.spark.format.TopicMetadata;

/**
 * A log root as a Spark catalog ({@code spark.sql.catalog.logs = io.seglog.spark.SeglogCatalog},
 * {@code spark.sql.catalog.logs.root = /data/log}): each topic is a table {@code logs.<topic>} (no namespaces), and
 * the DDL statements are Kafka's admin operations, with Kafka's rules (docs/spec.md §8.1): CREATE TABLE is
 * CreateTopics (with AS SELECT, CreateTopics and one Produce), ALTER TABLE SET/UNSET TBLPROPERTIES
 * IncrementalAlterConfigs (and CreatePartitions for {@code partitions}), DROP TABLE ... PURGE DeleteTopics. Every
 * request is checked whole before anything changes.
 */
public final class SeglogCatalog implements StagingTableCatalog {
    public static final String PROVIDER = "seglog";
    /** Properties Spark adds to CREATE TABLE itself; taken without meaning. */
    private static final Set<String> SPARK_ADDS = Set.of(TableCatalog.PROP_OWNER, "is_managed_location");

    private String name;
    private String root;

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        String given = options.get("root");
        String where = "spark.sql.catalog." + name + ".root";
        if (given == null || given.isBlank()) {
            throw new SeglogCatalogException("catalog '" + name + "': no log root; set " + where + " (a folder: /data/log)");
        }
        try {
            root = RootPath.local(given, where);
        } catch (IllegalArgumentException e) {
            throw new SeglogCatalogException(e.getMessage());
        }
    }

    @Override
    public String name() {
        return name;
    }

    private Path rootPath() {
        return Paths.get(root);
    }

    /** A table's topic: its name, in the catalog's one (empty) namespace. */
    private String topic(Identifier ident) {
        if (ident.namespace().length != 0) {
            throw new SeglogCatalogException("catalog '" + name + "' has no namespaces (its tables are the topics of " + root
                + "): name a table " + name + ".<topic>, not " + name + "." + String.join(".", ident.namespace()) + "." + ident.name());
        }
        if (!TopicLayout.validTopic(ident.name())) {
            throw new InvalidTopicException("table " + name + ".`" + ident.name() + "`: not a topic name: a topic is 1 to 249 "
                + "characters of [a-zA-Z0-9._-], not '.' or '..'");
        }
        return ident.name();
    }

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 0) throw new NoSuchNamespaceException(namespace);
        List<Identifier> out = new ArrayList<>();
        for (String t : TopicLayout.topics(rootPath())) out.add(Identifier.of(new String[0], t));
        return out.toArray(new Identifier[0]);
    }

    private boolean exists(String topic) {
        return TopicCatalog.load(rootPath(), topic).isPresent() || !TopicLayout.partitions(rootPath(), topic).isEmpty();
    }

    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        if (ident.namespace().length != 0 || !TopicLayout.validTopic(ident.name())) throw new NoSuchTableException(ident);
        String topic = ident.name();
        Optional<TopicMetadata> meta = TopicCatalog.load(rootPath(), topic);
        if (meta.isEmpty() && TopicLayout.partitions(rootPath(), topic).isEmpty()) throw new NoSuchTableException(ident);
        return new TopicTable(name, root, topic, meta.orElse(null));
    }

    /**
     * The load of a table a statement writes ({@code TableCatalog.loadTable(Identifier, Set<TableWritePrivilege>)}, Spark
     * 4 and 3.5.3+), overridden here by its erasure: the jar compiles against 3.5.0, which has no TableWritePrivilege
     * (on 3.5.0 to 3.5.2 this is an unused overload, and UPDATE and MERGE get Spark's own errors: README). A
     * statement that updates or deletes (UPDATE, DELETE, MERGE with such a clause, INSERT OVERWRITE) is refused now,
     * before Spark resolves it: a log is append-only.
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    public Table loadTable(Identifier ident, Set privileges) throws NoSuchTableException {
        for (Object p : privileges) {
            String privilege = String.valueOf(p);
            if (privilege.equals("UPDATE") || privilege.equals("DELETE")) {
                throw new AppendOnlyException("A statement that updates or deletes records (UPDATE, DELETE, MERGE, INSERT "
                    + "OVERWRITE) of", name + "." + ident.name());
            }
        }
        return loadTable(ident);
    }

    /**
     * CreateTopics: {@code partitions} (default 1, as Kafka's num.partitions) and Kafka's topic configuration by
     * name, validated by TopicConfigRules; any other property, columns or PARTITIONED BY are refused by name.
     * The schema is the source's, fixed.
     */
    @Override
    @SuppressWarnings("deprecation")   // abstract on Spark 3.5; the default of 4.x's other createTable calls it
    public Table createTable(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        String topic = topic(ident);
        if (schema.fields().length > 0) {
            throw new SeglogCatalogException("CREATE TABLE " + name + "." + topic + ": columns were given; a topic's columns "
                + "are the seglog source's (key, value, topic, partition, offset, timestamp, timestampType, headers): give none");
        }
        NewTopic request = newTopic(ident, "CREATE TABLE", partitions, properties);
        TopicCatalog.create(rootPath(), topic, request.partitions, request.config);   // validates every key and value, naming it
        return tableOf(topic);
    }

    /** A CREATE TABLE's request: the topic's partition count and configuration (Kafka's names, as given). */
    private static final class NewTopic {
        final int partitions;
        final Map<String, String> config;

        NewTopic(int partitions, Map<String, String> config) {
            this.partitions = partitions;
            this.config = config;
        }
    }

    /** The request CREATE TABLE (with or without AS SELECT) makes, refused by name when it asks what a topic has not;
     *  TableAlreadyExistsException when the topic exists. Nothing is written. */
    private NewTopic newTopic(Identifier ident, String statement, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException {
        String topic = topic(ident);
        String table = name + "." + topic;
        if (partitions.length > 0) {
            throw new SeglogCatalogException(statement + " " + table + ": PARTITIONED BY is not supported: a topic's "
                + "partitions are set with TBLPROPERTIES ('partitions' = 'n')");
        }
        int count = 1;
        Map<String, String> config = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : properties.entrySet()) {
            String key = e.getKey();
            String lower = key.toLowerCase(Locale.ROOT);
            if (SPARK_ADDS.contains(lower)) continue;
            if (lower.equals(TableCatalog.PROP_PROVIDER)) {
                if (!PROVIDER.equalsIgnoreCase(e.getValue())) {
                    throw new SeglogCatalogException(statement + " " + table + ": USING " + e.getValue() + ": catalog '"
                        + name + "' holds seglog topics only");
                }
            } else if (lower.equals("partitions")) {
                count = partitionCount(table, e.getValue());
            } else {
                config.put(key, e.getValue());   // TopicCatalog names an unknown key, with the nearest known one
            }
        }
        if (exists(topic)) throw new TableAlreadyExistsException(ident);
        return new NewTopic(count, config);
    }

    /**
     * CREATE TABLE ... AS SELECT: CreateTopics and one Produce, as one statement. The request is checked whole (as
     * CREATE TABLE's, nothing written) before the query runs; the topic is then created by the write's own commit
     * (under the topic's writer lock, with the records: write.DriverCommit), so a query that fails leaves no topic
     * behind, and one that succeeds appends its rows once. {@link StagedTopic#commitStagedChanges} records a topic
     * the query gave no rows to.
     */
    @Override
    @SuppressWarnings("deprecation")   // abstract on Spark 3.5; the default of 4.x's Column[] variant calls it
    public StagedTable stageCreate(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        String topic = topic(ident);
        NewTopic request = newTopic(ident, "CREATE TABLE ... AS SELECT", partitions, properties);
        TopicCatalog.checkNew(rootPath(), topic, request.partitions, request.config);   // names a bad key or value
        return new StagedTopic(name, root, topic, request.partitions, request.config);
    }

    @Override
    @SuppressWarnings("deprecation")
    public StagedTable stageReplace(Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
        throw replaceRefused(ident);
    }

    @Override
    @SuppressWarnings("deprecation")
    public StagedTable stageCreateOrReplace(Identifier ident, StructType schema, Transform[] partitions,
                                            Map<String, String> properties) {
        throw replaceRefused(ident);
    }

    private SeglogCatalogException replaceRefused(Identifier ident) {
        return new SeglogCatalogException("REPLACE TABLE " + name + "." + ident.name() + ": replacing a topic deletes its "
            + "records and a log is append-only; DROP TABLE ... PURGE it, then CREATE TABLE; nothing was changed");
    }

    private Table tableOf(String topic) {
        return new TopicTable(name, root, topic, TopicCatalog.load(rootPath(), topic).orElse(null));
    }

    static int partitionCount(String table, String text) {
        long n;
        try {
            n = Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 1 || n > TopicCatalog.MAX_PARTITIONS) {
            throw new SeglogCatalogException(table + ": 'partitions' = '" + text + "'; allowed: an integer from 1 to "
                + TopicCatalog.MAX_PARTITIONS + "; nothing was changed");
        }
        return (int) n;
    }

    /**
     * IncrementalAlterConfigs: SET TBLPROPERTIES sets the keys named, UNSET returns them to their defaults, every
     * other key keeps its value; {@code partitions} may grow (CreatePartitions), never shrink. Nothing else changes.
     */
    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        String topic = topic(ident);
        String table = name + "." + topic;
        if (!exists(topic)) throw new NoSuchTableException(ident);
        Map<String, String> set = new LinkedHashMap<>();
        List<String> unset = new ArrayList<>();
        Integer partitions = null;
        for (TableChange c : changes) {
            if (c instanceof TableChange.SetProperty) {
                TableChange.SetProperty s = (TableChange.SetProperty) c;
                if (s.property().equalsIgnoreCase("partitions")) partitions = partitionCount(table, s.value());
                else set.put(s.property(), s.value());
            } else if (c instanceof TableChange.RemoveProperty) {
                String key = ((TableChange.RemoveProperty) c).property();
                if (key.equalsIgnoreCase("partitions")) {
                    throw new SeglogCatalogException("ALTER TABLE " + table + " UNSET TBLPROPERTIES ('partitions'): a topic "
                        + "always has a partition count, which can only grow; nothing was changed");
                }
                unset.add(key);
            } else {
                throw new SeglogCatalogException("ALTER TABLE " + table + ": " + c.getClass().getSimpleName() + " is not "
                    + "supported: a topic's columns are fixed; only SET/UNSET TBLPROPERTIES (its configuration and "
                    + "partitions) change it");
            }
        }
        if (TopicCatalog.load(rootPath(), topic).isEmpty()) {
            throw new SeglogCatalogException("ALTER TABLE " + table + ": the topic has partition folders but no recorded "
                + "metadata (a root written before topics were recorded); nothing was changed");
        }
        TopicAdmin.alter(rootPath(), topic, set, unset, partitions);
        return tableOf(topic);
    }

    /** Kafka's DeleteTopics only with PURGE: a plain DROP TABLE would read as forgetting a table, not deleting a log. */
    @Override
    public boolean dropTable(Identifier ident) {
        String topic = topic(ident);
        throw new SeglogCatalogException("DROP TABLE " + name + "." + topic + ": deleting a topic deletes its records; say "
            + "DROP TABLE " + name + "." + topic + " PURGE to delete it");
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        String topic = topic(ident);
        if (!exists(topic)) return false;
        TopicAdmin.delete(rootPath(), topic);
        return true;
    }

    @Override
    public void renameTable(Identifier from, Identifier to) {
        throw new SeglogCatalogException("ALTER TABLE " + name + "." + from.name() + " RENAME: a topic cannot be renamed "
            + "(Kafka has no rename either); nothing was changed");
    }
}
