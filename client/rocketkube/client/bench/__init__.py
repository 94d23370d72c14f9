"""Benchmarks that drive rocketkube servers over the wire, as a client would.

- :mod:`rocketkube.client.bench.broker`: broker ingest (pipelined sends), delivery (pulls)
  and one-at-a-time send latency; one function per scenario, each returning a result.
- :mod:`rocketkube.client.bench.flood`: a producer's one-at-a-time sends alone and under a
  flood of malformed frames from :mod:`rocketkube.client.bench.flooder` (a child process).
- :mod:`rocketkube.client.bench.cli`: the flags of ``rocketkube bench broker ...``;
  :mod:`rocketkube.client.bench.runners` runs each benchmark: against a server given by
  address, or against a name server and brokers that
  :mod:`rocketkube.client.bench.local_cluster` starts as child processes (the client never
  imports the broker); it prints a table or report lines and a JSON summary.

Benchmarks print numbers; they assert nothing about speed.
"""
