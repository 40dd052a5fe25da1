"""Benchmarks for the li engine: ``python -m bench`` (or ``make bench``).

Benchmarks print measurements and ratios against a baseline taken in the same run;
they never assert timings. See bench/README.md.
"""
