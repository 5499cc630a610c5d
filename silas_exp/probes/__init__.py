"""Compression probes: probe sets, compression events, answers and the judge."""
