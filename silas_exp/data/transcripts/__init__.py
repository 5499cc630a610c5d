"""Real transcripts in, runnable suites out: format readers, the neutral event
form they produce, the session builder, ground truth derived from later use,
and probes written from the transcript."""
