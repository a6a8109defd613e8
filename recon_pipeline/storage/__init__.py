"""One room per stored resource: one module per table the pipeline writes (``findings``, ``adjustments``,
``matches``, ``provider_records``, ``night_outcomes``, ``night_takings``), each owning the run's writes and
the reads both the command line and the review desk use; ``partition`` holds the lock every writer of a
property-night takes. Nothing outside this package writes those tables (``core/test_layers.py``).
"""
