"""Example silas_exp plug-in: a recency scorer and an LRU eviction strategy."""
