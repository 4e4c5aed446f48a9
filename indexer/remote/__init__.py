"""Tiered storage (docs/tiered-storage.md, Kafka's KIP-405): where the remote tier is (`location`), the
objects there (`store`), the per-partition remote segment metadata log (`metadata`), the sidecar's tier
pass (`tier`) and reads across both tiers (`tiered_log`)."""
