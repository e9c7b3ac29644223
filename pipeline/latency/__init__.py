"""Operator latency measured on built stores (see :mod:`pipeline.latency.operators`)."""
