"""The record batch codec, magic 2 (docs/format.md, "Record batches"): the header's layout, the reference
per-record codec, the bulk columnar codec and its compiled kernels, and Kafka's compression codecs."""
