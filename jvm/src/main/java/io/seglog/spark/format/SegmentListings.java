package io.seglog.spark.format;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Partition folders' segment listings carried from one look to the next (a stream's triggers, issue 24):
 * a folder is listed again only when its mtime moved. Creating, renaming or deleting a name in a folder
 * sets its mtime (POSIX), and every change to a segment listing is one of those: a roll, a staged segment
 * renamed in, retention's {@code .deleted} rename, a clean's or merge's swap.
 *
 * <p>Invariant: a kept listing is reused only when no name in its folder can have changed since it was
 * taken. The mtime is read before the listing, so the listing holds at least the folder as of that mtime.
 * A later change gets a later mtime, unless it lands in the same tick of the filesystem's clock as the
 * mtime read (a coarse kernel clock, a 1 s or 2 s timestamp on some filesystems): so a listing whose
 * folder mtime was within {@link #GRANULARITY_MS} of the time it was read is never reused, and the next
 * look lists again. A segment gone under a reused listing still surfaces as a {@link SegmentGoneException}
 * when it is opened: the caller {@link #forget}s the listings and lists again, as after any listing.
 * A segment added under a kept listing that the mtime missed (a clock set back, a shared volume's stale
 * attributes) is caught where missing it would skip records: read_committed's scan that finds a kept
 * listing ending before the committed end lists again ({@code TransactionFates}).
 */
public final class SegmentListings {
    /** Wider than any filesystem's mtime granularity (FAT's 2 s) plus clock skew between a shared
     *  volume's server and this host: the cost of a wide guard is listing again for that long after a change. */
    static final long GRANULARITY_MS = 2_000;

    /** No memory: every look lists (a batch read plans once). */
    public static final SegmentListings NONE = new SegmentListings(false);

    private static final class Kept {
        private final FileTime mtime;
        private final long[] bases;
        private final int maxLeaderEpoch;

        private Kept(FileTime mtime, long[] bases, int maxLeaderEpoch) {
            this.mtime = mtime;
            this.bases = bases;
            this.maxLeaderEpoch = maxLeaderEpoch;
        }

        public FileTime mtime() { return mtime; }
        public long[] bases() { return bases; }
        public int maxLeaderEpoch() { return maxLeaderEpoch; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Kept)) return false;
            Kept that = (Kept) o;
            return java.util.Objects.equals(mtime, that.mtime)
                    && java.util.Objects.equals(bases, that.bases)
                    && maxLeaderEpoch == that.maxLeaderEpoch;
        }

        @Override public int hashCode() { return java.util.Objects.hash(mtime, bases, maxLeaderEpoch); }

        @Override public String toString() { return "Kept[mtime=" + mtime + ", bases=" + bases + ", maxLeaderEpoch=" + maxLeaderEpoch + "]"; }
    }

    private final boolean keeps;
    private final Map<Path, Kept> kept = new ConcurrentHashMap<>();

    private SegmentListings(boolean keeps) {
        this.keeps = keeps;
    }

    /** Listings kept across looks (one per stream). */
    public static SegmentListings kept() {
        return new SegmentListings(true);
    }

    /** What a look at a folder found: its segments' bases (sorted), the leader epoch bound of its batches, and
     *  whether it is a kept listing (not taken now). */
    static final class Found {
        private final long[] bases;
        private final int maxLeaderEpoch;
        private final boolean kept;

        Found(long[] bases, int maxLeaderEpoch, boolean kept) {
            this.bases = bases;
            this.maxLeaderEpoch = maxLeaderEpoch;
            this.kept = kept;
        }

        public long[] bases() { return bases; }
        public int maxLeaderEpoch() { return maxLeaderEpoch; }
        public boolean kept() { return kept; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Found)) return false;
            Found that = (Found) o;
            return java.util.Objects.equals(bases, that.bases)
                    && maxLeaderEpoch == that.maxLeaderEpoch
                    && kept == that.kept;
        }

        @Override public int hashCode() { return java.util.Objects.hash(bases, maxLeaderEpoch, kept); }

        @Override public String toString() { return "Found[bases=" + bases + ", maxLeaderEpoch=" + maxLeaderEpoch + ", kept=" + kept + "]"; }
    }

    /** The folder's segments as of now: the kept listing when the folder did not change since, else a new one. */
    Found look(Path dir) {
        if (!keeps) return list(dir);
        FileTime mtime;
        long now = System.currentTimeMillis();
        try {
            mtime = Files.readAttributes(dir, BasicFileAttributes.class).lastModifiedTime();
        } catch (NoSuchFileException e) {
            kept.remove(dir);
            return list(dir);    // reports the folder gone, as a listing does
        } catch (IOException e) {
            kept.remove(dir);
            return list(dir);
        }
        Kept k = kept.get(dir);
        if (k != null && k.mtime.equals(mtime)) return new Found(k.bases, k.maxLeaderEpoch, true);
        Found found = list(dir);
        // Within the clock's tick of now, a change may still come with this same mtime: not kept (see above).
        if (mtime.toMillis() <= now - GRANULARITY_MS) {
            kept.put(dir, new Kept(mtime, found.bases, found.maxLeaderEpoch));
        } else {
            kept.remove(dir);
        }
        return found;
    }

    private static Found list(Path dir) {
        long[] bases = PartitionLog.settledBases(dir);
        return new Found(bases, LeaderEpochs.maxLeaderEpoch(dir), false);
    }

    /** Drops every kept listing: the next look at each folder lists it (after a segment was found gone). */
    public void forget() {
        kept.clear();
    }
}
