# cython: language_level=3, boundscheck=False, wraparound=False
"""The dispatcher's count of a run's replies, compiled: :func:`count_replies` does what
``dispatch.count_replies`` does, counting runs of equal keys before touching the tally
(a run of pipelined sends has one key). ``tests/common/test_tally_kernel.py`` holds the
two to the same tallies.
"""

from rocketkube.common.remoting.command import RemotingCommand as _RemotingCommand


def count_replies(run, replies, dict tally):
    """``dispatch.count_replies``, compiled."""
    cdef Py_ssize_t at, count = len(run), same = 0
    cdef list rest = []
    if len(replies) != count:
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    last = None
    for at in range(count):
        request = run[at]
        reply = replies[at]
        if reply is None:
            key = (request.code, None)
        elif isinstance(reply, _RemotingCommand):
            key = (request.code, reply.code)
        else:
            rest.append(at)
            continue
        if same and key == last:
            same += 1
            continue
        if same:
            tally[last] = tally.get(last, 0) + same
        last = key
        same = 1
    if same:
        tally[last] = tally.get(last, 0) + same
    return rest
