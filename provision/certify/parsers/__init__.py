"""Parsers for the text (and JSON) that the benchmark tools print: nccl-tests, ib_write_bw, iperf3."""
