"""Benchmarks that drive rocketkube servers over the wire, as a client would.

- :mod:`rocketkube.bench.broker`: broker ingest (pipelined sends), delivery (pulls)
  and one-at-a-time send latency; one function per scenario, each returning a result.
- :mod:`rocketkube.bench.flood`: a producer's one-at-a-time sends alone and under a
  flood of malformed frames from :mod:`rocketkube.bench.flooder` (a child process).
- :mod:`rocketkube.bench.cli`: the flags of ``rocketkube bench broker ...``;
  :mod:`rocketkube.bench.runners` runs each benchmark: against a server given by
  address, or against a name server and brokers that
  :mod:`rocketkube.bench.local_cluster` starts as child processes (the bench never
  imports the broker or the name server: an import-linter contract); it prints a table or
  report lines and a JSON summary.

Benchmarks print numbers; they assert nothing about speed.
"""
