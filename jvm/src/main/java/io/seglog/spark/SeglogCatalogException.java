package io.seglog.spark;

/** A statement the seglog catalog refuses (an unknown property, a shrink, DROP without PURGE...): the message names
 *  what is wrong, and nothing was changed. */
public final class SeglogCatalogException extends IllegalArgumentException {
    public SeglogCatalogException(String message) {
        super(message);
    }
}
