package io.seglog.spark.format;

import java.util.regex.Pattern;

/**
 * The local folder a log root names, the Python core's {@code indexer.root.local_root}; both are held to
 * tests/conformance/root_uris.json. A plain path is taken as given; a {@code file:} URI ({@code file:///abs},
 * {@code file:/abs}) is the absolute path it names (Spark hands {@code save("file:///data/log")} over as written:
 * taken as a path it is the relative folder {@code file:/data/log} under the driver's current directory, where no
 * other tool looks). Any other scheme (a log root is a local folder), a relative or host-naming file URI, and a
 * file URI with %-escapes, a query or a fragment are refused with a message naming {@code where}.
 */
public final class RootPath {
    private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*:.*", Pattern.DOTALL);
    private static final String ALLOWED = "allowed: a folder path (/data/log) or a file URI naming one "
        + "(file:///data/log, file:/data/log)";

    private RootPath() {}

    /**
     * The root of a source's or a write's options: {@code path} ({@code load(root)}, {@code save(root)}), or
     * {@code location}, which the session catalog passes for {@code CREATE TABLE ... USING seglog LOCATION '...'};
     * both may be given when they name one folder. Null when neither is given.
     */
    public static String fromOptions(String path, String location, String who) {
        boolean hasPath = path != null && !path.isBlank(), hasLocation = location != null && !location.isBlank();
        String fromPath = hasPath ? local(path, who + ": option 'path'") : null;
        String fromLocation = hasLocation ? local(location, who + ": option 'location'") : null;
        if (fromPath != null && fromLocation != null && !java.nio.file.Paths.get(fromPath).normalize()
                .equals(java.nio.file.Paths.get(fromLocation).normalize())) {
            throw new IllegalArgumentException(who + ": option 'path' = '" + path + "' and option 'location' = '" + location
                + "' name two folders; give the log root once");
        }
        return fromPath != null ? fromPath : fromLocation;
    }

    /** The local path {@code raw} names; an {@link IllegalArgumentException} naming {@code where} when it names none. */
    public static String local(String raw, String where) {
        if (!SCHEME.matcher(raw).matches()) return raw;
        int colon = raw.indexOf(':');
        String scheme = raw.substring(0, colon);
        String rest = raw.substring(colon + 1);
        if (!scheme.equalsIgnoreCase("file")) {
            throw new IllegalArgumentException(where + " = '" + raw + "': scheme '" + scheme + "' is not supported: a log "
                + "root is a local folder; " + ALLOWED);
        }
        String path;
        if (rest.startsWith("///")) {
            path = rest.substring(2);
        } else if (rest.startsWith("//")) {
            throw new IllegalArgumentException(where + " = '" + raw + "': a file URI with a host is not supported; " + ALLOWED);
        } else if (rest.startsWith("/")) {
            path = rest;
        } else {
            throw new IllegalArgumentException(where + " = '" + raw + "': a file URI names an absolute path; " + ALLOWED);
        }
        if (path.indexOf('%') >= 0 || path.indexOf('?') >= 0 || path.indexOf('#') >= 0) {
            throw new IllegalArgumentException(where + " = '" + raw + "': %-escapes, queries and fragments are not "
                + "supported in a file URI; give the folder's plain path");
        }
        return path;
    }
}
