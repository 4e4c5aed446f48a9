"""The offset index (.index) and the time index (.timeindex) (docs/format.md), on one fixed-entry index file."""
