package io.seglog.spark.read;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * Tests: a remote tier's FileSystem on local files ({@code <scheme>://<any authority>/<absolute local path>}, set as
 * {@code fs.<scheme>.impl}) that records each stream a reader opens (a GET on an object store: the reader opens one
 * per fetch) with its thread and when it was opened and closed, and holds each stream's first read back
 * {@value #DELAY_KEY} milliseconds (a transfer's time), so fetches that run at once overlap.
 */
public final class RecordingFileSystem extends RawLocalFileSystem {
    static final String DELAY_KEY = "test.recording.delay.ms";
    static final ConcurrentLinkedQueue<Stream> STREAMS = new ConcurrentLinkedQueue<>();

    /** One stream: the object's name, the position of its first read, its thread, and when it opened and closed. */
    static final class Stream {
        final String name;
        final String thread;
        final long opened = System.nanoTime();
        volatile long firstRead = -1;
        volatile long closed = Long.MAX_VALUE;

        Stream(String name) {
            this.name = name;
            this.thread = Thread.currentThread().getName();
        }

        boolean overlaps(Stream o) {
            return opened < o.closed && o.opened < closed;
        }

        @Override
        public String toString() {
            return name + "@" + firstRead + " [" + opened / 1_000_000 + ", " + (closed == Long.MAX_VALUE ? "open" : closed / 1_000_000)
                + "] " + thread;
        }
    }

    private URI uri;
    private long delayMs;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        super.initialize(name, conf);
        uri = URI.create(name.getScheme() + "://" + name.getAuthority());
        delayMs = conf.getLong(DELAY_KEY, 0);
    }

    @Override
    public URI getUri() {
        return uri != null ? uri : super.getUri();      // the superclass's constructor asks before initialize
    }

    @Override
    public String getScheme() {
        return getUri().getScheme();
    }

    static List<Stream> streams(String suffix) {
        List<Stream> out = new ArrayList<>();
        for (Stream s : STREAMS) if (s.name.endsWith(suffix)) out.add(s);
        out.sort((a, b) -> Long.compare(a.opened, b.opened));
        return out;
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        File file = pathToFile(f);
        if (!file.isFile()) throw new java.io.FileNotFoundException(f.toString());
        Stream s = new Stream(file.getName());
        STREAMS.add(s);
        RandomAccessFile raf = new RandomAccessFile(file, "r");
        return new FSDataInputStream(new FSInputStream() {
            private boolean waited;

            private void first() throws IOException {
                if (waited) return;
                waited = true;
                s.firstRead = raf.getFilePointer();
                try {
                    Thread.sleep(delayMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException();
                }
            }

            @Override
            public void seek(long pos) throws IOException {
                raf.seek(pos);
            }

            @Override
            public long getPos() throws IOException {
                return raf.getFilePointer();
            }

            @Override
            public boolean seekToNewSource(long targetPos) {
                return false;
            }

            @Override
            public int read() throws IOException {
                first();
                return raf.read();
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                first();
                return raf.read(b, off, len);
            }

            @Override
            public void close() throws IOException {
                s.closed = System.nanoTime();
                raf.close();
            }
        });
    }
}
