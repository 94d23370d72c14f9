"""Types of the compiled index append (``_index.pyx``)."""

from rocketkube.broker.store.index import IndexFile

def put_many(index_file: IndexFile, entries: list[tuple[int, int, int]], start: int) -> int: ...
